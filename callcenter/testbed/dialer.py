"""A built-in test caller: dials over SIP, speaks sentences with Piper when the agent stops talking,
and transcribes what it hears. `voiceswarm call` and `make demo` use it; so do the end-to-end tests
and benchmarks/voice_to_voice.py, which also read the level of every frame it heard.

    caller = TestCaller(speech)
    exchange = await caller.call("sip:shop@127.0.0.1:5060", ["I want to return my headphones.", "Yes."])

or step by step (to talk over the agent, or to look at the shop between two lines):

    async with caller.connected(uri):
        await caller.agent_turn()
        await caller.say("I want to return my headphones.")
        await caller.agent_speaking()
        await caller.say("Sorry, stop.")  # over the agent: a barge-in
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from callcenter.voice import SpeechModels
from speech import Endpointer, SpeechEnded, SpeechStarted
from telephony import EndpointConfig, SipCall, SipEndpoint

log = logging.getLogger(__name__)

SILENCE_DBFS = -40.0  # a 20 ms frame below this level holds no speech
_END_SILENCE_FRAMES = 30  # 600 ms: more than the caller's endpointer waits to end an utterance


@dataclass
class Exchange:
    """What happened on the call, seen from the caller."""

    lines: list[tuple[str, str]] = field(default_factory=list)  # ("caller" | "agent", text), in order
    levels: list[tuple[float, float]] = field(default_factory=list)  # (monotonic time, dBFS) of each frame heard
    spoken: list[tuple[float, float]] = field(default_factory=list)  # (start, end of speech) of each line said
    end_reason: str | None = None  # how the call ended (remote_hangup: the agent hung up)

    def heard(self) -> str:
        return " ".join(text for who, text in self.lines if who == "agent")

    def loudest(self, start: float, end: float) -> float:
        """The loudest frame heard between two monotonic times, in dBFS (-inf when none)."""
        return max((level for at, level in self.levels if start <= at < end), default=-math.inf)

    def first_sound(self, after: float) -> float | None:
        """When the first frame with speech in it arrived after a monotonic time."""
        return next((at for at, level in self.levels if at >= after and level > SILENCE_DBFS), None)


@dataclass(frozen=True)
class CallerTiming:
    # The agent has finished its turn after this long without speech: longer than the silence between the
    # acknowledgements of a slow answer (voice.still_working_ms), which the agent fills while it thinks.
    agent_done_after_s: float = 2.5
    # The longest we wait for the agent to start or finish a turn.
    turn_timeout_s: float = 45.0


async def _refuse(call: SipCall) -> None:
    await call.hangup()  # the test caller only dials out


class TestCaller:
    __test__ = False  # not a pytest test class

    def __init__(
        self,
        speech: SpeechModels,
        *,
        caller_id: str = "+442079460321",
        host: str = "127.0.0.1",
        rtp_ports: tuple[int, int] = (30000, 32000),
        timing: CallerTiming = CallerTiming(),
        on_line: Callable[[str, str], None] | None = None,
        transcribe: bool = True,
        codecs: tuple[str, ...] = ("PCMU", "PCMA"),
        prompt: str | None = None,
    ) -> None:
        """`transcribe=False` skips Whisper on what the agent says (benchmarks: the caller's CPU is not the agent's);
        `codecs` are offered in this order (the agent takes the first it has); `prompt` is Whisper's for what the
        caller hears."""
        self.speech, self.caller_id, self.timing, self.on_line = speech, caller_id, timing, on_line
        self.transcribe, self.prompt = transcribe, prompt
        self.endpoint = SipEndpoint(
            EndpointConfig(
                listen_host=host, listen_port=0, rtp_port_range=rtp_ports, no_media_timeout_s=None, codecs=codecs
            ),
            _refuse,
        )
        self.exchange = Exchange()
        self._call: SipCall | None = None
        self._listener: asyncio.Task[None] | None = None
        self.voices: dict[str, np.ndarray] = {}  # lines already synthesized (several callers may share one)
        self._agent_speaking = False
        self._last_agent_speech = 0.0
        self._agent_turns = 0
        self._transcribing: set[asyncio.Task[None]] = set()
        self._last_transcription: asyncio.Task[None] | None = None  # lines are noted in the order they were said

    async def call(self, uri: str, lines: list[str], *, dtmf: str = "") -> Exchange:
        """Dial `uri`, say each line after the agent's turn, press `dtmf` keys at the end, then hang up."""
        async with self.connected(uri):
            await self.agent_turn()
            for line in lines:
                await self.say(line)
                await self.agent_turn()
            if dtmf:
                await self.press(dtmf)
                await self.agent_turn()
        return self.exchange

    @contextlib.asynccontextmanager
    async def connected(self, uri: str) -> AsyncIterator[SipCall]:
        """A call to `uri` for the duration of the block; hung up at its end (if the agent has not)."""
        await self.endpoint.start()
        try:
            call = await self.endpoint.dial(uri, from_user=self.caller_id)
            self._call = call
            self._listener = asyncio.create_task(self._listen(call))
            try:
                yield call
            finally:
                await call.hangup()
                await self._heard_all()
                self.exchange.end_reason = call.end_reason
        finally:
            await self.endpoint.stop(1.0)

    def prepare(self, *lines: str) -> None:
        """Synthesize lines ahead (blocking), so saying them later costs no CPU during the call."""
        for line in lines:
            if line not in self.voices:
                self.voices[line] = self.speech.synthesizer.synthesize(line)

    async def say(self, line: str) -> None:
        """Speak `line` now (over the agent if it is talking) and return once it has been sent."""
        call = self._require_call()
        audio = self.voices.get(line)
        if audio is None:
            audio = await asyncio.to_thread(self.speech.synthesizer.synthesize, line)
        self._note("caller", line)
        started = time.monotonic()
        call.play(audio)
        await call.wait_played()
        # Piper ends a line with a little silence: the speech ended before the last packet left.
        self.exchange.spoken.append((started, time.monotonic() - _trailing_silence_s(audio)))

    async def press(self, keys: str) -> None:
        call = self._require_call()
        for key in keys:
            await call.send_dtmf(key)
            await asyncio.sleep(0.3)

    async def agent_turn(self) -> None:
        """Wait for the agent to speak, then to stay quiet for agent_done_after_s (bounded in time)."""
        call = self._require_call()
        turns_before = self._agent_turns
        deadline = time.monotonic() + self.timing.turn_timeout_s
        while time.monotonic() < deadline and not call.closed.is_set():
            quiet = time.monotonic() - self._last_agent_speech
            if (
                self._agent_turns > turns_before
                and not self._agent_speaking
                and quiet >= self.timing.agent_done_after_s
            ):
                break
            await asyncio.sleep(0.05)
        # Note what the agent said before the caller's next line.
        await asyncio.gather(*self._transcribing, return_exceptions=True)

    async def listen(self, seconds: float) -> None:
        """Say nothing for `seconds` (less if the call ends), then let the agent finish what it is saying (quiet
        for agent_done_after_s, bounded in time), with its words transcribed."""
        call = self._require_call()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(call.closed.wait(), seconds)
        deadline = time.monotonic() + self.timing.turn_timeout_s
        while not call.closed.is_set() and time.monotonic() < deadline:
            quiet = time.monotonic() - self._last_agent_speech
            if not self._agent_speaking and quiet >= self.timing.agent_done_after_s:
                break
            await asyncio.sleep(0.05)
        await asyncio.gather(*self._transcribing, return_exceptions=True)

    async def agent_speaking(self) -> bool:
        """Wait (bounded) until the agent is talking; False if it never started or the call ended."""
        call = self._require_call()
        deadline = time.monotonic() + self.timing.turn_timeout_s
        while not self._agent_speaking and time.monotonic() < deadline and not call.closed.is_set():
            await asyncio.sleep(0.02)
        return self._agent_speaking

    async def hung_up(self, timeout_s: float) -> bool:
        """Wait until the agent's side ends the call; False if it is still up after timeout_s."""
        call = self._require_call()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(call.closed.wait(), timeout_s)
        if not call.closed.is_set():
            return False
        await self._heard_all()
        return True

    async def _heard_all(self) -> None:
        """Once the call is over: the last words heard, transcribed (bounded)."""
        if self._listener is not None:
            await asyncio.wait({self._listener}, timeout=5.0)  # the audio stream ends soon after the call
            self._listener.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._listener
        await asyncio.gather(*self._transcribing, return_exceptions=True)

    def _require_call(self) -> SipCall:
        if self._call is None:
            raise RuntimeError("no call: use `async with caller.connected(uri):` first")
        return self._call

    async def _listen(self, call: SipCall) -> None:
        endpointer = Endpointer(self.speech.vad, end_silence_ms=400, call_id=f"caller-{call.call_id}")
        async for frame in call.audio_in:
            self.exchange.levels.append((time.monotonic(), _dbfs(frame)))
            self._hear(endpointer.feed(frame))
        # The agent may hang up right after its last word: silence ends that utterance too.
        for _ in range(_END_SILENCE_FRAMES):
            self._hear(endpointer.feed(np.zeros(160, dtype=np.int16)))

    def _hear(self, events: Sequence[object]) -> None:
        for event in events:
            if isinstance(event, SpeechStarted):
                self._agent_speaking = True
            elif isinstance(event, SpeechEnded):
                self._agent_speaking = False
                self._last_agent_speech = time.monotonic()
                self._agent_turns += 1
                if self.transcribe:
                    # Transcribed aside, so the frames of the agent's next sentence keep flowing in.
                    task = asyncio.create_task(self._transcribe(event.audio, self._last_transcription))
                    self._last_transcription = task
                    self._transcribing.add(task)
                    task.add_done_callback(self._transcribing.discard)
        if self._agent_speaking:
            self._last_agent_speech = time.monotonic()

    async def _transcribe(self, audio: np.ndarray, previous: asyncio.Task[None] | None) -> None:
        transcript = await self.speech.transcriber.transcribe(audio, prompt=self.prompt)
        if previous is not None:
            await asyncio.wait({previous})
        if transcript.text.strip():
            self._note("agent", transcript.text.strip())

    def _note(self, who: str, text: str) -> None:
        self.exchange.lines.append((who, text))
        if self.on_line:
            self.on_line(who, text)


def _dbfs(frame: np.ndarray) -> float:
    rms = math.sqrt(float(np.mean(np.square(frame, dtype=np.float64)))) if frame.size else 0.0
    return 20 * math.log10(rms / 32768) if rms > 0 else -math.inf


def _trailing_silence_s(audio: np.ndarray, frame: int = 160) -> float:
    """Seconds after the last 20 ms frame with speech in it."""
    loud = [i for i in range(0, len(audio), frame) if _dbfs(audio[i : i + frame]) > SILENCE_DBFS]
    return (len(audio) - min(len(audio), loud[-1] + frame)) / 8000 if loud else len(audio) / 8000
