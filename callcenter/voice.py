"""The voice service: every answered call becomes a Conversation with its own session, and a call record."""

from __future__ import annotations

import asyncio
import logging
import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace

import numpy as np

from callcenter.acknowledgement import render
from callcenter.app import App
from callcenter.call import LiveConversations
from callcenter.call_records import CallRecord, CallRecords
from callcenter.config import EARLY_TAIL_MS, VoiceConfig
from callcenter.conversation import Conversation, TurnTiming, VoiceSettings
from callcenter.metrics import VoiceMetrics
from callcenter.recordings import OFF, CallRecorder, RecordingOutcome, Recordings
from callcenter.redact import redact
from callcenter.supervisor.live import LiveCalls
from callcenter.supervisor.views import masked_number
from speech import (
    TRAILING_OFF_PROMPT,
    Endpointer,
    LanguageCheck,
    ModelError,
    Synthesizer,
    SynthesizerConfig,
    ThreadJudge,
    Transcriber,
    TurnModel,
    TurnModelError,
    VadModel,
)
from telephony import Call

log = logging.getLogger(__name__)

OVERFLOW_PENDING = 1000  # over-limit calls answered but not yet handled, at most


@dataclass
class SpeechModels:
    """Loaded once per process and shared by every call."""

    transcriber: Transcriber
    synthesizer: Synthesizer
    vad: VadModel
    turn: TurnModel | None = None  # None: turns end by silence alone
    language: LanguageCheck | None = None  # None: callers in other languages are not told apart
    # The end-of-turn model's runs, off the event loop that paces every call's audio.
    _judges: ThreadPoolExecutor = field(
        default_factory=lambda: ThreadPoolExecutor(os.cpu_count() or 1, thread_name_prefix="turn")
    )

    @classmethod
    def load(cls, voice: VoiceConfig) -> SpeechModels:
        started = time.monotonic()
        named = voice.whisper_model in ("tiny.en", "base")
        transcriber = Transcriber(
            voice.whisper_model,
            model_path=None if named else voice.whisper_model,
            window_s=voice.whisper_window_s or None,  # 0: the model's own default
        )
        models = cls(
            transcriber,
            Synthesizer(SynthesizerConfig(voice=voice.piper_voice or None)),
            VadModel(),
            load_turn_model(voice),
            load_language_check(voice, transcriber),
        )
        log.info(
            "event=speech_loaded whisper=%s turn_model=%s seconds=%.1f",
            voice.whisper_model,
            models.turn.path if models.turn else "off",
            time.monotonic() - started,
        )
        return models

    def judge(self) -> ThreadJudge | None:
        return ThreadJudge(self.turn, self._judges) if self.turn is not None else None

    def close(self) -> None:
        self._judges.shutdown(wait=False, cancel_futures=True)
        if self.language is not None:
            self.language.close()
        self.synthesizer.close()
        self.transcriber.close()


def load_turn_model(voice: VoiceConfig) -> TurnModel | None:
    """The end-of-turn model, or None (with a warning) to end turns by silence, as before it existed."""
    if voice.turn_model == "off":
        return None
    try:
        return TurnModel(voice.turn_model or None)
    except TurnModelError as error:
        log.warning("event=turn_model_missing error=%s fallback=silence end_silence_ms=%d", error, voice.end_silence_ms)
        return None


def load_language_check(voice: VoiceConfig, ears: Transcriber) -> LanguageCheck | None:
    """Whisper base's language detector for voice.languages (the calls' own model when it is multilingual),
    or None (with a warning) when it cannot load."""
    if not voice.languages:
        return None
    try:
        return LanguageCheck(voice.languages, ears=ears)
    except (ModelError, ValueError) as error:
        log.warning("event=language_check_missing error=%s", error)
        return None


def endpointer_for(speech: SpeechModels, voice: VoiceConfig, call_id: str) -> Endpointer:
    """One call's endpointer: the end-of-turn model, when loaded, ends turns sooner or holds them longer."""
    judge = speech.judge()
    return Endpointer(
        speech.vad,
        end_silence_ms=voice.end_silence_ms,
        post_roll_ms=EARLY_TAIL_MS,
        pause_ms=voice.early_transcript_ms or None,
        judge=judge,
        turn_silence_ms=voice.turn_silence_ms,
        turn_threshold=voice.turn_threshold,
        turn_hold_threshold=voice.turn_hold_threshold,
        turn_max_silence_ms=voice.turn_max_silence_ms,
        # the words that finish a turn are the pause's transcript: none without early_transcript_ms
        finished_silence_ms=(voice.finished_silence_ms or None) if voice.early_transcript_ms else None,
        call_id=call_id,
    )


def domain_prompt(app: App) -> str:
    """Whisper's initial prompt: what a caller says, in the shop's words (measured in benchmarks/speech_stt.py).

    Whisper reads its prompt as the transcript before the utterance, so a caller's sentences steer it
    better than a list; the product names follow as the agent would say them. Whisper keeps only the
    prompt's last ~220 tokens, so a big catalogue is cut to what fits (~880 characters)."""
    prompt = (
        "Hello, thank you for calling. Hi, I'd like to order something, please. Is it in stock? "
        "I want to return what I bought, it doesn't work. Can I get a refund? Yes, my order number is 4 2 1 7. "
        f"{TRAILING_OFF_PROMPT} You sell"
    )
    for number, product in enumerate(app.shop.products()):
        name = (
            product.name if product.name[:2].isupper() else product.name[:1].lower() + product.name[1:]
        )  # "USB-C" stays
        if len(prompt) + len(name) > 880:
            break
        prompt += f"{',' if number else ''} the {name}"
    return prompt + "."


class VoiceService:
    def __init__(
        self,
        app: App,
        speech: SpeechModels,
        records: CallRecords,
        metrics: VoiceMetrics,
        recordings: Recordings | None = None,
    ) -> None:
        self.app, self.speech, self.records, self.metrics = app, speech, records, metrics
        self.recordings = recordings  # None: recording is off
        voice = app.config.voice
        self.region = app.config.privacy.phone_region  # for the caller's number, masked in the log
        self.settings = VoiceSettings.from_config(voice)
        # "announce": the notice comes first, on calls whose recording has started.
        self.announcing = replace(self.settings, greeting=f"{voice.recording_notice} {voice.greeting}")
        self.prompt = domain_prompt(app)
        self.live = LiveCalls()  # the supervisor's page's feed of the live calls
        # The calls live on this node: a drain ends them; the feed is told of each one coming and going.
        self.calls: LiveConversations[Conversation] = LiveConversations(self.live)
        self.fillers_audio: dict[str, np.ndarray] = {}  # the acknowledgements, rendered by warm_up()
        self._overflow: dict[str, bool] = {}  # call ids taken over the admission limits, to hand to a person

    def take_overflow(self, call_id: str) -> bool:
        """For SipEndpoint.overflow (voice.overload = "transfer"): answer this call over the limits; it is
        handed to the operator. Bounded: ids of calls whose set-up then failed are dropped, oldest first."""
        self._overflow[call_id] = True
        while len(self._overflow) > OVERFLOW_PENDING:
            del self._overflow[next(iter(self._overflow))]
        return True

    async def handle_call(self, call: Call) -> None:
        """Serve one answered call to its end; every failure still ends in a record."""
        started = time.time()
        session = self.app.session(call.call_id, call.caller)
        voice = self.app.config.voice
        endpointer = endpointer_for(self.speech, voice, call.call_id)
        recorder = self.recordings.start(call.call_id, started) if self.recordings is not None else None
        call.tap = recorder
        announce = recorder is not None and await self._announce(recorder)
        conversation = Conversation(
            call,
            session,
            endpointer,
            self.speech.transcriber,
            self.speech.synthesizer,
            self.announcing if announce else self.settings,
            domain_prompt=self.prompt,
            on_turn=self._observe,
            language_check=self.speech.language,
            fillers_audio=self.fillers_audio,
        )
        self.metrics.active_calls.inc()
        self.calls.add(call, conversation)
        log.info(
            "event=call_answered call=%s caller=%s called=%s",
            call.call_id,
            _logged_caller(call.caller, self.region),
            call.called,
        )
        disposition = "failed"
        try:
            overflow = self._overflow.pop(call.call_id, False)
            if overflow:
                log.info("event=call_overflow call=%s operator=%s", call.call_id, self.settings.operator)
            disposition = await conversation.run(overflow=overflow)
        except Exception:
            log.exception("event=call_failed call=%s", call.call_id)
            await call.hangup()
        finally:
            self.calls.end(call.call_id, disposition)
            self.metrics.active_calls.dec()
            self.metrics.calls.labels(disposition).inc()
            call.tap = None
            record = CallRecord(
                call.call_id,
                call.caller,
                call.called,
                started,
                time.time(),
                disposition,
                answered_at=started,
                end_reason="drained" if conversation.drained else call.end_reason,
                transcript=conversation.transcript.lines,
                turns=[t.breakdown() for t in conversation.transcript.turns],
            )
            record.add_session_events(session.swarm.default_agent, session.events)
            self.metrics.count_verifications(record.verifications)
            if recorder is None:
                self._save(record, OFF)
            else:  # saved by the recordings' writer thread once the file is closed: nothing here to await
                recorder.finish(lambda outcome: self._save(record, outcome))
            log.info("event=call_ended call=%s disposition=%s reason=%s", call.call_id, disposition, call.end_reason)

    def _save(self, record: CallRecord, recording: RecordingOutcome) -> None:
        record.recording, record.recording_seconds, record.recording_error = (
            recording.path,
            recording.seconds,
            recording.error,
        )
        self.records.save(record)

    async def _announce(self, recorder: CallRecorder) -> bool:
        """Whether to say the recording notice: "announce", and the file is being written."""
        if self.recordings is None or not self.recordings.announce:
            return False
        try:
            return await recorder.opened()
        except asyncio.CancelledError:  # the call ended before it started: the file is closed all the same
            recorder.finish(lambda _: None)
            raise

    async def warm_up(self) -> None:
        """Render the fixed phrases into the synthesizer's cache and run Whisper (and its language detector)
        once, so the first caller hears the greeting at once and does not pay for cold models."""
        started = time.monotonic()
        settings = self.settings
        audio = []
        greetings = (
            (settings.greeting, self.announcing.greeting)
            if self.recordings and self.recordings.announce
            else (settings.greeting,)
        )
        overflow = (settings.overload_notice,) if self.app.config.voice.overload == "transfer" else ()
        if settings.fillers is not None:  # whole, kept apart from the synthesizer's cache: never rendered on a turn
            for phrase in settings.fillers.phrases():
                self.fillers_audio[phrase] = await render(self.speech.synthesizer, phrase)
        for text in (*greetings, *overflow, settings.repeat, settings.reprompt, settings.handover):
            audio += [chunk async for chunk in self.speech.synthesizer.synthesize_stream(text, "warm-up")]
        heard = np.concatenate(audio[:2])
        await self.speech.transcriber.transcribe(heard, prompt=self.prompt, call_id="warm-up")
        if self.speech.language is not None:
            await asyncio.to_thread(self.speech.language.detect, heard)  # whatever its length
        log.info("event=speech_warmed seconds=%.2f", time.monotonic() - started)

    def _observe(self, timing: TurnTiming) -> None:
        self.metrics.observe_turn(timing.breakdown())


def _logged_caller(caller: str, region: str) -> str:
    """The caller's number masked for the log; a name or a SIP user without digits is an identity too."""
    return redact(caller, region) if any(ch.isdigit() for ch in caller) else masked_number(caller)
