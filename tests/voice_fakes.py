"""Fakes for the parts of a call, so `Conversation` runs in milliseconds: the call (playback at many times
real time), the endpointer (events the test scripts), Whisper (texts the test scripts) and Piper (tagged
silence, one tag per sentence, so what the caller heard can be read back sentence by sentence)."""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from speech import EndpointerEvent, Language, SpeechEnded, SpeechPaused, SpeechResumed, SpeechStarted, Transcript
from speech.turn_words import BACKCHANNEL_PROMPT
from telephony.call import EndReason, MediaTap

RATE = 8000
FRAME = 160


class FakeCall:
    """A Call whose playback runs `speed` times faster than real time; it records every sample it sent."""

    def __init__(self, speed: float = 40.0, call_id: str = "call-1", caller: str = "+442079460321") -> None:
        self.call_id, self.caller, self.called = call_id, caller, "shop"
        self.caller_name: str | None = None
        self.tap: MediaTap | None = None  # never fed: the fake has no media clock
        self.headers: Mapping[str, str] = {}
        self.closed = asyncio.Event()
        self.end_reason: EndReason | None = None
        self.transfers: list[str] = []
        self.sent: list[np.ndarray] = []  # everything the caller heard, in order
        self.flushes = 0
        self._speed = speed
        self._queue: deque[np.ndarray] = deque()
        self._played = 0
        self._audio: asyncio.Queue[np.ndarray | None] = asyncio.Queue()
        self._keys: asyncio.Queue[str | None] = asyncio.Queue()
        self._idle = asyncio.Event()
        self._idle.set()
        self._player = asyncio.get_running_loop().create_task(self._play_out())

    # --- what the Conversation uses ----------------------------------------------------------------------

    @property
    async def audio_in(self) -> AsyncIterator[np.ndarray]:
        while (frame := await self._audio.get()) is not None:
            yield frame

    @property
    async def dtmf_in(self) -> AsyncIterator[str]:
        while (key := await self._keys.get()) is not None:
            yield key

    def play(self, pcm16: np.ndarray) -> None:
        if not self.closed.is_set() and pcm16.size:
            self._queue.append(pcm16)
            self._idle.clear()

    def flush(self) -> None:
        self.flushes += bool(self._queue)
        self._queue.clear()
        self._idle.set()

    @property
    def playing(self) -> bool:
        return bool(self._queue)

    @property
    def played_samples(self) -> int:
        return self._played

    async def wait_played(self) -> None:
        closed = asyncio.ensure_future(self.closed.wait())
        idle = asyncio.ensure_future(self._idle.wait())
        await asyncio.wait({closed, idle}, return_when=asyncio.FIRST_COMPLETED)
        closed.cancel(), idle.cancel()

    async def transfer(self, target: str) -> bool:
        self.transfers.append(target)
        self._end("transferred")
        return True

    async def hangup(self) -> None:
        self._end("local_hangup")

    # --- what the test does ------------------------------------------------------------------------------

    def frame(self) -> None:
        self._audio.put_nowait(np.zeros(FRAME, dtype=np.int16))

    def press(self, keys: str) -> None:
        for key in keys:
            self._keys.put_nowait(key)

    def hang_up_remote(self) -> None:
        self._end("remote_hangup")

    def heard_tags(self) -> list[int]:
        """The sentence tags the caller heard, one per 20 ms of audio."""
        audio = np.concatenate(self.sent) if self.sent else np.zeros(0, dtype=np.int16)
        return [int(t) for t in audio[::FRAME]]

    def _end(self, reason: EndReason) -> None:
        if not self.closed.is_set():
            self.end_reason = reason
            self.closed.set()
            self._queue.clear()
            self._idle.set()
            self._audio.put_nowait(None)
            self._keys.put_nowait(None)
            self._player.cancel()

    async def _play_out(self) -> None:
        tick = 0.002
        per_tick = max(FRAME, int(RATE * tick * self._speed) // FRAME * FRAME)
        while True:
            await asyncio.sleep(tick)
            budget = per_tick
            while budget and self._queue:
                head = self._queue[0]
                take = min(budget, head.size)
                self.sent.append(head[:take])
                self._played += take
                budget -= take
                if take == head.size:
                    self._queue.popleft()
                else:
                    self._queue[0] = head[take:]
            if not self._queue:
                self._idle.set()


class FakeEndpointer:
    """Gives back, for each frame fed, the next list of events the test queued (none when there are none)."""

    def __init__(self) -> None:
        self.pending: deque[list[EndpointerEvent]] = deque()
        self.finished = 0  # calls of finish(): the conversation heard a finished sentence at a pause

    def feed(self, frame: np.ndarray) -> list[EndpointerEvent]:
        return self.pending.popleft() if self.pending else []

    def finish(self) -> None:
        self.finished += 1


@dataclass
class FakeTranscriber:
    """Hears an utterance's text by its audio's tag (the utterance's audio is filled with its tag)."""

    texts: dict[int, str] = field(default_factory=dict)
    delay_s: float = 0.0
    heard: list[str] = field(default_factory=list)
    unclear: set[str] = field(default_factory=set)  # heard only after a second, beam-search pass (retried)
    hums: dict[str, str] = field(default_factory=dict)  # text -> what is heard when prompted with backchannels
    mumbled: set[str] = field(default_factory=set)  # heard, but not trusted (confident=False)
    prompts: list[str | None] = field(default_factory=list)

    def utterance(self, text: str, seconds: float = 1.0) -> np.ndarray:
        tag = 1000 + len(self.texts)
        self.texts[tag] = text
        return np.full(int(seconds * RATE), tag, dtype=np.int16)

    async def transcribe(self, pcm16_8k: np.ndarray, *, prompt: str | None = None, call_id: str = "-") -> Transcript:
        await asyncio.sleep(self.delay_s)
        # Every utterance in the audio, in order: held words are heard again with the rest of the sentence.
        tags = dict.fromkeys(int(sample) for sample in pcm16_8k if int(sample) in self.texts)
        text = " ".join(self.texts[tag] for tag in tags)
        if prompt == BACKCHANNEL_PROMPT:
            text = self.hums.get(text, text)
        self.heard.append(text)
        self.prompts.append(prompt)
        logprob = -0.7 if text in self.unclear else -0.2 if text else float("-inf")
        confident = bool(text) and text not in self.mumbled
        return Transcript(
            text, logprob, 0.0 if text else 1.0, pcm16_8k.size / RATE, confident, retried=text in self.unclear
        )


@dataclass
class FakeLanguageCheck:
    """Hears the language of an utterance by its text, as FakeTranscriber made it: `foreign` maps texts to codes."""

    transcriber: FakeTranscriber
    foreign_texts: dict[str, str] = field(default_factory=dict)
    min_speech_s: float = 1.5
    judged: list[str] = field(default_factory=list)
    broken: bool = False  # the detector raises, as a model whose pool was shut down

    async def foreign(self, pcm16_8k: np.ndarray, *, call_id: str = "-") -> Language | None:
        text = self.transcriber.texts[int(pcm16_8k[0])]
        self.judged.append(text)
        if self.broken:
            raise RuntimeError("cannot schedule new futures after shutdown")
        code = self.foreign_texts.get(text)
        return None if code is None else Language(code, probability=1.0, served_probability=0.0)


@dataclass
class FakeSynthesizer:
    """Each sentence becomes `seconds_per_word` of audio per word, every sample holding the sentence's tag."""

    seconds_per_word: float = 0.3
    sentences: list[str] = field(default_factory=list)
    delay_s: float = 0.0  # before a sentence's first audio: a busy machine, or a slow model before it

    def tag(self, sentence: str) -> int:
        return self.sentences.index(sentence) + 1

    async def synthesize_stream(self, text: str, call_id: str = "") -> AsyncGenerator[np.ndarray, None]:
        if text not in self.sentences:
            self.sentences.append(text)
        samples = int(len(text.split()) * self.seconds_per_word * RATE)
        await asyncio.sleep(self.delay_s)
        for start in range(0, samples, 4 * FRAME):
            await asyncio.sleep(0)
            yield np.full(min(4 * FRAME, samples - start), self.tag(text), dtype=np.int16)


class Caller:
    """The caller's side of a fake call: speaks utterances (as endpointer events), coughs, presses keys."""

    def __init__(self, call: FakeCall, endpointer: FakeEndpointer, transcriber: FakeTranscriber) -> None:
        self.call, self.endpointer, self.transcriber = call, endpointer, transcriber
        self._at = 0.0

    async def say(self, text: str, seconds: float = 1.0) -> None:
        """Start speaking (SpeechStarted), then end the turn (a pause, then SpeechEnded) a moment later."""
        await self.start()
        await self.end(text, seconds)

    async def start(self) -> None:
        self._at += 1.0
        self._feed([SpeechStarted(self._at)])
        await settle()

    async def end(self, text: str, seconds: float = 1.0) -> None:
        audio = self.transcriber.utterance(text, seconds)
        self._feed([SpeechPaused(audio, self._at)])
        self._feed([SpeechEnded(audio, self._at, seconds, "silence")])
        await settle()

    async def pause(self, text: str, seconds: float = 1.0) -> np.ndarray:
        """Say `text` and fall silent (SpeechPaused); the turn then ends (finish) or the caller goes on (end)."""
        audio = self.transcriber.utterance(text, seconds)
        self._feed([SpeechPaused(audio, self._at)])
        await settle()
        return audio

    async def resume(self) -> None:
        """Speak again after a pause, in the same utterance (SpeechResumed)."""
        self._feed([SpeechResumed(self._at)])
        await settle()

    async def finish(self, audio: np.ndarray) -> None:
        """The silence after a pause lasted: the turn ends with the paused audio."""
        self._feed([SpeechEnded(audio, self._at, audio.size / RATE, "silence")])
        await settle()

    def _feed(self, events: list[Any]) -> None:
        self.endpointer.pending.append(events)
        self.call.frame()


async def settle(seconds: float = 0.02) -> None:
    """Let the conversation's tasks run."""
    await asyncio.sleep(seconds)


async def until(condition: Any, timeout_s: float = 3.0, what: str = "condition") -> None:
    async with asyncio.timeout(timeout_s):
        while not condition():
            await asyncio.sleep(0.002)


@contextlib.asynccontextmanager
async def running(conversation: Any) -> AsyncIterator[asyncio.Task[str]]:
    task = asyncio.create_task(conversation.run())
    try:
        yield task
    finally:
        if not task.done():
            conversation.call.hang_up_remote()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait_for(task, 5)


if TYPE_CHECKING:
    from callcenter.call.language import LanguageChecking
    from callcenter.call.seams import Endpointing, Synthesizing, Transcribing

    def _the_fakes_fit_the_call(
        endpointer: FakeEndpointer, transcriber: FakeTranscriber, language: FakeLanguageCheck, piper: FakeSynthesizer
    ) -> tuple[Endpointing, Transcribing, LanguageChecking, Synthesizing]:
        return endpointer, transcriber, language, piper  # mypy: each fake stands in for the part it fakes
