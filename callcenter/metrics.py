"""Prometheus metrics of the voice service, each on its own registry so tests and processes never mix."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, fields
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from callcenter.verification import OUTCOMES
from telephony import IntervalHistogram, RtpStats, SipEndpoint, SipMetrics

# Seconds: voice-to-voice latency lives between a few hundred milliseconds and a few seconds.
_BUCKETS = (0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 3.0, 5.0, 10.0)


@dataclass
class VoiceMetrics:
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)

    def __post_init__(self) -> None:
        r = self.registry
        self.calls = Counter("voiceswarm_calls", "Calls ended, by disposition", ["disposition"], registry=r)
        self.active_calls = Gauge("voiceswarm_active_calls", "Calls in progress", registry=r)
        self.stt = Histogram(
            "voiceswarm_stt_seconds", "End of caller speech to transcript", buckets=_BUCKETS, registry=r
        )
        self.llm = Histogram(
            "voiceswarm_llm_first_sentence_seconds",
            "Transcript to the model's first sentence",
            buckets=_BUCKETS,
            registry=r,
        )
        self.tts = Histogram(
            "voiceswarm_tts_first_audio_seconds", "First sentence to its first audio", buckets=_BUCKETS, registry=r
        )
        self.voice_to_voice = Histogram(
            "voiceswarm_voice_to_voice_seconds",
            "End of caller speech to first reply audio",
            buckets=_BUCKETS,
            registry=r,
        )
        self.node_state = Gauge(
            "voiceswarm_node_state", "1 for the node's state: serving, overloaded or draining", ["state"], registry=r
        )
        self.admission_refusals = Gauge(
            "voiceswarm_admission_refusals", "New calls and probes refused for overload", registry=r
        )
        self.verifications = Counter(
            "voiceswarm_verifications",
            "Answers to the security question (passed, failed) and questions left open at the end of a call (gave_up)",
            ["outcome"],
            registry=r,
        )
        for outcome in OUTCOMES:  # each series from 0, so a rate over the first failures is not lost
            self.verifications.labels(outcome)
        # The last turns' speech-to-text times, which admission control reads (a histogram keeps no recent values).
        self.recent_stt: deque[float] = deque(maxlen=20)

    def observe_turn(self, breakdown: dict[str, float | bool | None]) -> None:
        for histogram, key in (
            (self.stt, "stt_s"),
            (self.llm, "llm_s"),
            (self.tts, "tts_s"),
            (self.voice_to_voice, "voice_to_voice_s"),
        ):
            value = breakdown.get(key)
            if value is not None:
                histogram.observe(value)
        stt = breakdown.get("stt_s")
        if isinstance(stt, float):
            self.recent_stt.append(stt)

    def count_verifications(self, verifications: Iterable[dict[str, Any]]) -> None:
        """Count an ended call's verifications (CallRecord.verifications)."""
        for attempt in verifications:
            if attempt.get("outcome") in OUTCOMES:
                self.verifications.labels(attempt["outcome"]).inc()

    def exposition(self) -> bytes:
        return generate_latest(self.registry)


# RtpStats' counters as Prometheus names them (every counter of RtpStats has one: tests/test_metrics.py).
RTP_COUNTERS = {
    "packets_sent": ("voiceswarm_rtp_packets_sent", "RTP packets sent"),
    "bytes_sent": ("voiceswarm_rtp_payload_sent_bytes", "RTP payload octets sent"),
    "packets_received": ("voiceswarm_rtp_packets_received", "RTP packets received from the latched source"),
    "bytes_received": ("voiceswarm_rtp_payload_received_bytes", "RTP payload octets received"),
    "malformed": ("voiceswarm_rtp_packets_malformed", "RTP/RTCP datagrams that did not parse"),
    "srtp_rejected": ("voiceswarm_rtp_packets_srtp_rejected", "Packets failing SRTP authentication or replay checks"),
    "wrong_payload": ("voiceswarm_rtp_packets_wrong_payload", "Packets of payload types not negotiated"),
    "foreign": ("voiceswarm_rtp_packets_foreign", "Packets from an allowed host but not the latched address"),
    "stranger": (
        "voiceswarm_rtp_packets_stranger",
        "RTP and RTCP from a host neither the SDP named nor sip.media_sources lists, dropped unread (strict RTP)",
    ),
    "late": ("voiceswarm_rtp_packets_late", "Packets arriving after their playout time (late frames), dropped"),
    "duplicate": ("voiceswarm_rtp_packets_duplicate", "Duplicate packets dropped by the jitter buffer"),
    "reordered": ("voiceswarm_rtp_packets_reordered", "Packets put back in order by the jitter buffer"),
    "lost": ("voiceswarm_rtp_packets_lost", "Packets given up as lost by the jitter buffer"),
    "concealed_samples": ("voiceswarm_rtp_concealed_samples", "8 kHz samples filled in for lost packets"),
    "frames_dropped": (
        "voiceswarm_rtp_frames_dropped",
        "20 ms frames dropped because the call's consumer was too slow",
    ),
    "dtmf_received": ("voiceswarm_rtp_dtmf_received", "RFC 4733 key presses received"),
    "dtmf_sent": ("voiceswarm_rtp_dtmf_sent", "RFC 4733 key presses sent"),
    "rtcp_sent": ("voiceswarm_rtcp_packets_sent", "RTCP compound packets sent"),
    "rtcp_received": ("voiceswarm_rtcp_packets_received", "RTCP compound packets received"),
    "send_skipped": ("voiceswarm_rtp_send_slots_skipped", "20 ms send slots given up because the event loop was late"),
    "send_errors": ("voiceswarm_rtp_send_errors", "RTP packets the socket refused"),
}
# Jitter (RFC 3550 interarrival) of each ended call, seconds.
JITTER_BUCKETS = (0.002, 0.005, 0.01, 0.02, 0.03, 0.05, 0.1, 0.2)
_SIP_GAUGES = {"calls_active"}


class TelephonyCollector(Collector):
    """The SIP endpoint's counters (SipMetrics) and its calls' RTP counters, read at scrape time: telephony
    counts once, in plain ints that know nothing of Prometheus, and nothing is counted twice."""

    def __init__(self, endpoint: SipEndpoint) -> None:
        self.endpoint = endpoint

    def collect(self) -> Iterator[Metric]:
        yield from sip_metrics(self.endpoint.metrics)
        live = [call.rtp_stats for call in self.endpoint.calls]
        yield from rtp_metrics(
            self.endpoint.media.counters, live, self.endpoint.media.jitter, self.endpoint.media.jitter_ms_sum
        )


def sip_metrics(metrics: SipMetrics) -> Iterator[Metric]:
    for name, value in ((f.name, getattr(metrics, f.name)) for f in fields(metrics)):
        if isinstance(value, int) and name in _SIP_GAUGES:
            yield GaugeMetricFamily(f"voiceswarm_sip_{name}", f"SIP: {name.replace('_', ' ')}", value=value)
        elif isinstance(value, int):
            yield CounterMetricFamily(
                f"voiceswarm_sip_{name}", f"SIP: {name.replace('_', ' ')} (telephony/sip/metrics.py)", value=value
            )
    for direction in ("received", "sent"):
        requests = CounterMetricFamily(
            f"voiceswarm_sip_requests_{direction}", f"SIP requests {direction}, by method", labels=["method"]
        )
        for method, count in sorted(getattr(metrics, f"requests_{direction}").items()):
            requests.add_metric([method], count)
        responses = CounterMetricFamily(
            f"voiceswarm_sip_responses_{direction}",
            f"SIP responses {direction}, by CSeq method and status code",
            labels=["method", "code"],
        )
        for (method, code), count in sorted(getattr(metrics, f"responses_{direction}").items()):
            responses.add_metric([method, str(code)], count)
        yield requests
        yield responses


def rtp_metrics(
    ended: dict[str, int], live: list[RtpStats], jitter: IntervalHistogram, jitter_ms_sum: float
) -> Iterator[Metric]:
    for field_name, (name, help_text) in RTP_COUNTERS.items():
        total = ended.get(field_name, 0) + sum(getattr(stats, field_name) for stats in live)
        yield CounterMetricFamily(name, help_text, value=total)
    yield GaugeMetricFamily(
        "voiceswarm_rtp_jitter_max_seconds",
        "Largest interarrival jitter among the live calls",
        value=max((stats.jitter_ms for stats in live), default=0.0) / 1000,
    )
    histogram = HistogramMetricFamily(
        "voiceswarm_rtp_jitter_seconds", "Interarrival jitter of each ended call at its end"
    )
    buckets = [(str(edge), float(_count_below(jitter, edge * 1000))) for edge in JITTER_BUCKETS]
    histogram.add_metric([], [*buckets, ("+Inf", float(jitter.count))], sum_value=jitter_ms_sum / 1000)
    yield histogram


def _count_below(histogram: IntervalHistogram, edge_ms: float) -> int:
    # Each bin holds values from its lower edge up to (not including) the next.
    return sum(histogram.counts[: round(edge_ms / histogram.BIN_MS)])
