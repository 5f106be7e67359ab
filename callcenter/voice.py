"""The voice service: every answered call becomes a Conversation with its own session, and a call record."""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import numpy as np

from callcenter.app import App
from callcenter.config import EARLY_TAIL_MS, VoiceConfig
from callcenter.conversation import Conversation, TurnTiming, VoiceSettings
from callcenter.metrics import VoiceMetrics
from callcenter.records import CallRecord, CallRecords
from speech.endpointer import Endpointer
from speech.synthesizer import Synthesizer, SynthesizerConfig
from speech.transcriber import Transcriber
from speech.vad import VadModel
from telephony.call import Call

log = logging.getLogger(__name__)


@dataclass
class SpeechModels:
    """Loaded once per process and shared by every call."""

    transcriber: Transcriber
    synthesizer: Synthesizer
    vad: VadModel

    @classmethod
    def load(cls, voice: VoiceConfig) -> SpeechModels:
        started = time.monotonic()
        named = voice.whisper_model in ("tiny.en", "base")
        transcriber = Transcriber(voice.whisper_model) if named else Transcriber(model_path=voice.whisper_model)
        models = cls(transcriber, Synthesizer(SynthesizerConfig(voice=voice.piper_voice or None)), VadModel())
        log.info("event=speech_loaded whisper=%s seconds=%.1f", voice.whisper_model, time.monotonic() - started)
        return models

    def close(self) -> None:
        self.synthesizer.close()
        self.transcriber.close()


def domain_prompt(app: App) -> str:
    """Whisper's initial prompt: what a caller says, in the shop's words (measured in benchmarks/speech_stt.py).

    Whisper reads its prompt as the transcript before the utterance, so a caller's sentences steer it
    better than a list; the product names follow as the agent would say them. Whisper keeps only the
    prompt's last ~220 tokens, so a big catalogue is cut to what fits (~800 characters)."""
    prompt = ("Hello, thank you for calling. Hi, I'd like to order something, please. Is it in stock? "
              "I want to return what I bought, it doesn't work. Can I get a refund? Yes, my order number is 4 2 1 7. You sell")
    for number, product in enumerate(app.shop.products()):
        name = product.name if product.name[:2].isupper() else product.name[:1].lower() + product.name[1:]  # "USB-C" stays
        if len(prompt) + len(name) > 800:
            break
        prompt += f"{',' if number else ''} the {name}"
    return prompt + "."


class VoiceService:
    def __init__(self, app: App, speech: SpeechModels, records: CallRecords, metrics: VoiceMetrics) -> None:
        self.app, self.speech, self.records, self.metrics = app, speech, records, metrics
        voice = app.config.voice
        self.settings = VoiceSettings(
            greeting=voice.greeting, operator=voice.operator or None, reprompt_after_s=voice.reprompt_after_s,
            reprompts_before_hangup=voice.reprompts_before_hangup, max_call_s=voice.max_call_s,
        )
        self.prompt = domain_prompt(app)

    async def handle_call(self, call: Call) -> None:
        """Serve one answered call to its end; every failure still ends in a record."""
        started = time.time()
        session = self.app.session(call.call_id, call.caller)
        voice = self.app.config.voice
        endpointer = Endpointer(self.speech.vad, end_silence_ms=voice.end_silence_ms, post_roll_ms=EARLY_TAIL_MS,
                                pause_ms=voice.early_transcript_ms or None, call_id=call.call_id)
        conversation = Conversation(call, session, endpointer, self.speech.transcriber, self.speech.synthesizer,
                                    self.settings, domain_prompt=self.prompt, on_turn=self._observe)
        self.metrics.active_calls.inc()
        log.info("event=call_answered call=%s caller=%s called=%s", call.call_id, call.caller, call.called)
        disposition = "failed"
        try:
            disposition = await conversation.run()
        except Exception:
            log.exception("event=call_failed call=%s", call.call_id)
            await call.hangup()
        finally:
            self.metrics.active_calls.dec()
            self.metrics.calls.labels(disposition).inc()
            record = CallRecord(call.call_id, call.caller, call.called, started, time.time(), disposition,
                                answered_at=started, end_reason=call.end_reason, transcript=conversation.transcript.lines,
                                turns=[t.breakdown() for t in conversation.transcript.turns])
            record.add_session_events(session.swarm.default_agent, session.events)
            self.records.save(record)
            log.info("event=call_ended call=%s disposition=%s reason=%s", call.call_id, disposition, call.end_reason)

    async def warm_up(self) -> None:
        """Render the fixed phrases into the synthesizer's cache and run Whisper once, so the first caller
        hears the greeting at once and does not pay for cold models."""
        started = time.monotonic()
        settings = self.settings
        audio = []
        for text in (settings.greeting, settings.repeat, settings.reprompt, settings.handover):
            audio += [chunk async for chunk in self.speech.synthesizer.synthesize_stream(text, "warm-up")]
        await self.speech.transcriber.transcribe(np.concatenate(audio[:2]), prompt=self.prompt, call_id="warm-up")
        log.info("event=speech_warmed seconds=%.2f", time.monotonic() - started)

    def _observe(self, timing: TurnTiming) -> None:
        self.metrics.observe_turn(timing.breakdown())
