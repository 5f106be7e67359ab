"""/metrics: the SIP endpoint's and the calls' RTP counters as Prometheus reads them (fast, with plain
counters; tests/test_voice_e2e.py reads the page of a live server after a real call)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from callcenter.metrics import RTP_COUNTERS, TelephonyCollector
from telephony.rtp import MediaTotals, RtpStats
from telephony.sip.message import parse_message
from telephony.sip.metrics import SipMetrics

NAME = re.compile(r"^voiceswarm_(sip|rtp|rtcp)_[a-z_]+$")


@dataclass
class FakeCall:
    rtp_stats: RtpStats


@dataclass
class FakeEndpoint:
    """What the collector reads of a SipEndpoint."""

    metrics: SipMetrics = field(default_factory=SipMetrics)
    media: MediaTotals = field(default_factory=MediaTotals)
    calls: list[FakeCall] = field(default_factory=list)


def scrape(endpoint: FakeEndpoint) -> dict[tuple[str, frozenset], float]:
    registry = CollectorRegistry()
    registry.register(TelephonyCollector(endpoint))  # type: ignore[arg-type]
    families = text_string_to_metric_families(generate_latest(registry).decode())
    return {(s.name, frozenset(s.labels.items())): s.value for family in families for s in family.samples}


def test_every_rtp_counter_has_a_prometheus_name() -> None:
    assert set(RTP_COUNTERS) == set(RtpStats().counters())


def test_names_follow_prometheus_conventions() -> None:
    registry = CollectorRegistry()
    registry.register(TelephonyCollector(FakeEndpoint()))  # type: ignore[arg-type]
    for family in text_string_to_metric_families(generate_latest(registry).decode()):
        assert NAME.match(family.name), family.name
        if family.type == "counter":
            assert all(s.name == family.name + "_total" for s in family.samples), family.name
        if "bytes" in family.name or "seconds" in family.name:
            assert family.name.endswith(("_bytes", "_seconds")), family.name  # the unit last, before _total


def test_sip_messages_are_counted_by_method_and_code() -> None:
    endpoint = FakeEndpoint()
    metrics = endpoint.metrics
    invite = parse_message(
        b"INVITE sip:shop@127.0.0.1 SIP/2.0\r\nVia: SIP/2.0/UDP 127.0.0.1:5062;branch=z9hG4bK1\r\n"
        b"From: <sip:+4930123456@127.0.0.1>;tag=a\r\nTo: <sip:shop@127.0.0.1>\r\nCall-ID: c1\r\n"
        b"CSeq: 1 INVITE\r\nMax-Forwards: 70\r\nContent-Length: 0\r\n\r\n"
    )
    scan = parse_message(invite.to_bytes().replace(b"INVITE", b"FOOBAR"))
    ringing = parse_message(
        b"SIP/2.0 180 Ringing\r\nVia: SIP/2.0/UDP 127.0.0.1:5062;branch=z9hG4bK1\r\n"
        b"From: <sip:a@127.0.0.1>;tag=a\r\nTo: <sip:b@127.0.0.1>;tag=b\r\nCall-ID: c1\r\n"
        b"CSeq: 1 INVITE\r\nContent-Length: 0\r\n\r\n"
    )
    for message in (invite, invite, scan):
        metrics.count_received(message)
    metrics.count_sent(ringing)
    metrics.rate_limited += 3
    page = scrape(endpoint)
    assert page[("voiceswarm_sip_requests_received_total", frozenset({("method", "INVITE")}))] == 2
    # A scanner's made-up methods all count as "other": they cannot grow the number of series.
    assert page[("voiceswarm_sip_requests_received_total", frozenset({("method", "other")}))] == 1
    assert page[("voiceswarm_sip_responses_sent_total", frozenset({("method", "INVITE"), ("code", "180")}))] == 1
    assert page[("voiceswarm_sip_rate_limited_total", frozenset())] == 3


def test_rtp_counters_never_go_down_when_a_call_ends() -> None:
    endpoint = FakeEndpoint()
    first = RtpStats(packets_received=500, lost=2, late=1, jitter_ms=4.0)
    second = RtpStats(packets_received=300, jitter_ms=25.0)
    endpoint.media.add(first)
    endpoint.calls = [FakeCall(second)]
    live = scrape(endpoint)
    assert live[("voiceswarm_rtp_packets_received_total", frozenset())] == 800
    assert live[("voiceswarm_rtp_packets_late_total", frozenset())] == 1
    assert live[("voiceswarm_rtp_jitter_max_seconds", frozenset())] == 0.025
    endpoint.calls = []
    endpoint.media.add(second)
    ended = scrape(endpoint)
    assert ended[("voiceswarm_rtp_packets_received_total", frozenset())] == 800
    assert ended[("voiceswarm_rtp_packets_lost_total", frozenset())] == 2
    jitter = {
        dict(labels).get("le"): value
        for (name, labels), value in ended.items()
        if name == "voiceswarm_rtp_jitter_seconds_bucket"
    }
    assert jitter["0.005"] == 1 and jitter["0.02"] == 1 and jitter["0.03"] == 2 and jitter["+Inf"] == 2
    assert ended[("voiceswarm_rtp_jitter_seconds_sum", frozenset())] == 0.029
