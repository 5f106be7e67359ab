"""Prometheus metrics of the voice service, each on its own registry so tests and processes never mix."""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

# Seconds: voice-to-voice latency lives between a few hundred milliseconds and a few seconds.
_BUCKETS = (0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 3.0, 5.0, 10.0)


@dataclass
class VoiceMetrics:
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)

    def __post_init__(self) -> None:
        r = self.registry
        self.calls = Counter("voiceswarm_calls", "Calls ended, by disposition", ["disposition"], registry=r)
        self.active_calls = Gauge("voiceswarm_active_calls", "Calls in progress", registry=r)
        self.stt = Histogram("voiceswarm_stt_seconds", "End of caller speech to transcript", buckets=_BUCKETS, registry=r)
        self.llm = Histogram("voiceswarm_llm_first_sentence_seconds", "Transcript to the model's first sentence", buckets=_BUCKETS, registry=r)
        self.tts = Histogram("voiceswarm_tts_first_audio_seconds", "First sentence to its first audio", buckets=_BUCKETS, registry=r)
        self.voice_to_voice = Histogram("voiceswarm_voice_to_voice_seconds", "End of caller speech to first reply audio", buckets=_BUCKETS, registry=r)
        self.node_state = Gauge("voiceswarm_node_state", "1 for the node's state: serving, overloaded or draining", ["state"], registry=r)
        self.admission_refusals = Gauge("voiceswarm_admission_refusals", "New calls and probes refused for overload", registry=r)
        # The last turns' speech-to-text times, which admission control reads (a histogram keeps no recent values).
        self.recent_stt: deque[float] = deque(maxlen=20)

    def observe_turn(self, breakdown: dict[str, float | bool | None]) -> None:
        for histogram, key in ((self.stt, "stt_s"), (self.llm, "llm_s"), (self.tts, "tts_s"), (self.voice_to_voice, "voice_to_voice_s")):
            value = breakdown.get(key)
            if value is not None:
                histogram.observe(value)
        stt = breakdown.get("stt_s")
        if isinstance(stt, float):
            self.recent_stt.append(stt)

    def exposition(self) -> bytes:
        return generate_latest(self.registry)
