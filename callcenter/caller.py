"""A built-in test caller: dials over SIP, speaks sentences with Piper when the agent stops talking,
and transcribes what it hears. `voiceswarm call` and `make demo` use it; so do the end-to-end tests."""
from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from callcenter.voice import SpeechModels
from speech.endpointer import Endpointer, SpeechEnded, SpeechStarted
from telephony.endpoint import EndpointConfig, SipEndpoint
from telephony.sip_call import SipCall

log = logging.getLogger(__name__)


@dataclass
class Exchange:
    """What was said on the call, in order: ("caller" | "agent", text)."""

    lines: list[tuple[str, str]] = field(default_factory=list)

    def heard(self) -> str:
        return " ".join(text for who, text in self.lines if who == "agent")


@dataclass(frozen=True)
class CallerTiming:
    # The agent has finished its turn after this long without speech.
    agent_done_after_s: float = 1.6
    # The longest we wait for the agent to start or finish a turn.
    turn_timeout_s: float = 45.0


async def _refuse(call: SipCall) -> None:
    await call.hangup()  # the test caller only dials out


class TestCaller:
    def __init__(self, speech: SpeechModels, *, caller_id: str = "+442079460321", host: str = "127.0.0.1",
                 rtp_ports: tuple[int, int] = (30000, 32000), timing: CallerTiming = CallerTiming(),
                 on_line: Callable[[str, str], None] | None = None) -> None:
        self.speech, self.caller_id, self.timing, self.on_line = speech, caller_id, timing, on_line
        self.endpoint = SipEndpoint(EndpointConfig(listen_host=host, listen_port=0, rtp_port_range=rtp_ports,
                                                   no_media_timeout_s=None), _refuse)
        self.exchange = Exchange()
        self._agent_speaking = False
        self._last_agent_speech = 0.0
        self._agent_turns = 0
        self._transcribing: set[asyncio.Task[None]] = set()

    async def call(self, uri: str, lines: list[str], *, dtmf: str = "") -> Exchange:
        """Dial `uri`, say each line after the agent's turn, press `dtmf` keys at the end, then hang up."""
        await self.endpoint.start()
        try:
            call = await self.endpoint.dial(uri, from_user=self.caller_id)
            listener = asyncio.create_task(self._listen(call))
            try:
                await self._converse(call, lines, dtmf)
            finally:
                await call.hangup()
                listener.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await listener
        finally:
            await self.endpoint.stop(1.0)
        return self.exchange

    async def _converse(self, call: SipCall, lines: list[str], dtmf: str) -> None:
        await self._agent_turn(call)
        for line in lines:
            audio = self.speech.synthesizer.synthesize(line)
            self._note("caller", line)
            call.play(audio)
            await call.wait_played()
            await self._agent_turn(call)
        for key in dtmf:
            await call.send_dtmf(key)
            await asyncio.sleep(0.3)
        if dtmf:
            await self._agent_turn(call)

    async def _agent_turn(self, call: SipCall) -> None:
        """Wait for the agent to speak, then to stay quiet for agent_done_after_s (bounded in time)."""
        turns_before = self._agent_turns
        deadline = time.monotonic() + self.timing.turn_timeout_s
        while time.monotonic() < deadline and not call.closed.is_set():
            quiet = time.monotonic() - self._last_agent_speech
            if self._agent_turns > turns_before and not self._agent_speaking and quiet >= self.timing.agent_done_after_s:
                break
            await asyncio.sleep(0.05)
        # Print what the agent said before the caller's next line.
        await asyncio.gather(*self._transcribing, return_exceptions=True)

    async def _listen(self, call: SipCall) -> None:
        endpointer = Endpointer(self.speech.vad, end_silence_ms=400, call_id=f"caller-{call.call_id}")
        async for frame in call.audio_in:
            for event in endpointer.feed(frame):
                if isinstance(event, SpeechStarted):
                    self._agent_speaking = True
                elif isinstance(event, SpeechEnded):
                    self._agent_speaking = False
                    self._last_agent_speech = time.monotonic()
                    self._agent_turns += 1
                    # Transcribed aside, so the frames of the agent's next sentence keep flowing in.
                    task = asyncio.create_task(self._transcribe(event.audio))
                    self._transcribing.add(task)
                    task.add_done_callback(self._transcribing.discard)
            if self._agent_speaking:
                self._last_agent_speech = time.monotonic()

    async def _transcribe(self, audio) -> None:  # noqa: ANN001 - int16 numpy audio
        transcript = await self.speech.transcriber.transcribe(audio)
        if transcript.text.strip():
            self._note("agent", transcript.text.strip())

    def _note(self, who: str, text: str) -> None:
        self.exchange.lines.append((who, text))
        if self.on_line:
            self.on_line(who, text)
