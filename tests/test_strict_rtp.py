"""Strict RTP: a call's media is taken only from the host its SDP named (any port) or sip.media_sources.

A stranger who sprays the RTP port range (RTP bleed, RTP injection) sends from another loopback address,
127.0.0.2, before the SDP's peer: its packets must never latch, never be heard and never receive the call's
audio, while the peer (from another port than its SDP said, as behind NAT) is heard. Real UDP sockets on
127.0.0.0/8, an RtpSession and then a whole SipEndpoint call; and the [sip] keys that configure it.
"""

from __future__ import annotations

import asyncio
import logging
import re
import secrets
from pathlib import Path

import numpy as np
import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from callcenter.config import ConfigError, endpoint_config, load_config
from callcenter.metrics import TelephonyCollector
from harness.peers import sdp_offer, sip_request
from telephony.codec import PCMU
from telephony.g711 import ulaw_decode, ulaw_encode
from telephony.rtcp import sender_report
from telephony.rtp import RtpSession
from telephony.rtp_packet import RtpPacket
from telephony.sip.message import Response
from telephony.sources import MediaSources
from telephony.srtp import SrtpKeys, SrtpPolicy, SrtpStreams
from tests.test_rtp import Peer

pytestmark = pytest.mark.timeout(30)

LOCAL = "127.0.0.1"
STRANGER = "127.0.0.2"  # another host as far as the session can tell (Linux answers all of 127.0.0.0/8)
PEER_LEVEL = 4000  # what the SDP's peer says
STRANGER_LEVEL = 30000  # what the stranger says: a frame this loud was the stranger's


@pytest.fixture
async def udp():
    opened: list[asyncio.DatagramTransport] = []

    async def open_on(host: str) -> Peer:
        transport, protocol = await asyncio.get_running_loop().create_datagram_endpoint(Peer, local_addr=(host, 0))
        opened.append(transport)
        return protocol

    yield open_on
    for transport in opened:
        transport.close()


@pytest.fixture
async def open_session():
    sessions: list[RtpSession] = []

    async def opener(**options) -> RtpSession:
        session = await RtpSession.open(LOCAL, (30000, 39999), **options)
        sessions.append(session)
        return session

    yield opener
    for session in sessions:
        await session.close()


def packet(seq: int, level: int, ssrc: int) -> bytes:
    return RtpPacket(0, seq, seq * 160, ssrc, ulaw_encode(np.full(160, level, np.int16))).to_bytes()


async def frames(session_or_call, count: int, timeout: float = 3.0) -> list[np.ndarray]:
    taken: list[np.ndarray] = []
    async with asyncio.timeout(timeout):
        async for frame in session_or_call.audio_in:
            taken.append(frame)
            if len(taken) == count:
                break
    return taken


def loudest(taken: list[np.ndarray]) -> int:
    return int(np.abs(np.concatenate(taken).astype(np.int32)).max())


# ---- one RtpSession ----------------------------------------------------------------------------------------


async def test_a_strangers_packets_arriving_first_are_not_latched_nor_heard(open_session, udp) -> None:
    session = await open_session()
    sdp_port, peer, stranger = await udp(LOCAL), await udp(LOCAL), await udp(STRANGER)
    session.start(sdp_port.addr, PCMU, None)  # the SDP named 127.0.0.1:<sdp_port>
    for seq in range(20):  # the spray reaches the call's port before the caller's first packet
        stranger.send(packet(seq, STRANGER_LEVEL, 0x666), session.local_port)
    await asyncio.sleep(0.1)
    assert session.remote == sdp_port.addr  # nothing latched
    assert (session.stats.stranger, session.stats.packets_received) == (20, 0)
    for seq in range(30):  # the caller, from the SDP's host but another port (NAT)
        peer.send(packet(100 + seq, PEER_LEVEL, 0x1234), session.local_port)
    heard = await frames(session, 25)
    assert session.remote == peer.addr  # latched to the caller's real source
    assert loudest(heard) == int(ulaw_decode(ulaw_encode(np.array([PEER_LEVEL], np.int16)))[0])
    for seq in range(20, 30):  # the stranger goes on after the latch: still nobody hears it
        stranger.send(packet(seq, STRANGER_LEVEL, 0x666), session.local_port)
    await asyncio.sleep(0.1)
    stats = session.stats
    assert (stats.stranger, stats.foreign, stats.packets_received) == (30, 0, 30)
    while len(session.audio_in):
        assert loudest([await anext(session.audio_in)]) < STRANGER_LEVEL // 2
    assert stranger.drain() == 0  # not one of our packets went to the stranger
    assert peer.drain() > 0


async def test_the_relaxed_session_latches_onto_whoever_sends_first(open_session, udp) -> None:
    """strict_rtp = false is the old symmetric RTP: the attack strict RTP closes, shown to be real."""
    session = await open_session(sources=MediaSources(strict=False))
    sdp_port, stranger = await udp(LOCAL), await udp(STRANGER)
    session.start(sdp_port.addr, PCMU, None)
    for seq in range(10):
        stranger.send(packet(seq, STRANGER_LEVEL, 0x666), session.local_port)
    heard = await frames(session, 5)
    assert session.remote == stranger.addr and session.stats.stranger == 0
    assert loudest(heard) > STRANGER_LEVEL // 2
    await asyncio.sleep(0.1)
    assert stranger.drain() > 0  # and the call's audio goes to the stranger


async def test_a_media_relay_listed_in_media_sources_is_heard(open_session, udp) -> None:
    """A PBX whose SDP names its SIP host while its RTP leaves from a relay on 127.0.0.2/32."""
    session = await open_session(sources=MediaSources.parse(["127.0.0.2/32"]))
    sdp_port, relay = await udp(LOCAL), await udp(STRANGER)
    session.start(sdp_port.addr, PCMU, None)
    for seq in range(10):
        relay.send(packet(seq, PEER_LEVEL, 0x77), session.local_port)
    await frames(session, 5)
    assert session.remote == relay.addr and session.stats.stranger == 0


async def test_strangers_are_logged_once_a_minute_and_rtcp_is_checked_too(open_session, udp, caplog) -> None:
    session = await open_session()
    sdp_port, stranger = await udp(LOCAL), await udp(STRANGER)
    session.start(sdp_port.addr, PCMU, None)
    with caplog.at_level(logging.WARNING, logger="telephony.rtp"):
        for seq in range(50):
            stranger.send(packet(seq, STRANGER_LEVEL, 0x666), session.local_port)
        stranger.send(sender_report(0x666, 1e9, 0, 1, 160, [], "stranger"), session.local_port + 1)
        await asyncio.sleep(0.15)
    lines = [record.getMessage() for record in caplog.records if "event=rtp_stranger" in record.getMessage()]
    assert len(lines) == 1 and f"source={STRANGER}:" in lines[0] and "media_sources does not list" in lines[0]
    assert session.stats.stranger == 51 and session.stats.rtcp_received == 0


async def test_a_hold_to_0000_keeps_the_sdp_host_allowed(open_session, udp) -> None:
    session = await open_session()
    sdp_port, peer, stranger = await udp(LOCAL), await udp(LOCAL), await udp(STRANGER)
    session.start(sdp_port.addr, PCMU, None)
    session.update_remote(("0.0.0.0", 0))  # RFC 2543 hold: send nothing; the caller may still play music
    stranger.send(packet(1, STRANGER_LEVEL, 0x666), session.local_port)
    peer.send(packet(1, PEER_LEVEL, 0x1234), session.local_port)
    await asyncio.sleep(0.1)
    assert (session.stats.stranger, session.stats.packets_received) == (1, 1)


def srtp_keys() -> tuple[SrtpKeys, SrtpKeys]:
    suite = "AES_CM_128_HMAC_SHA1_80"
    first, second = SrtpPolicy("offer").key(suite), SrtpPolicy("offer").key(suite)
    return SrtpKeys(suite, first, second), SrtpKeys(suite, second, first)


async def test_with_srtp_a_replayed_packet_from_a_stranger_neither_latches_nor_spoils_the_caller(
    open_session, udp
) -> None:
    """SRTP authenticates a packet, not its source: a copy of the caller's packets sent on ahead from elsewhere
    would pass the check, latch the call's audio away and mark the caller's own packets as replays."""
    ours, theirs = srtp_keys()
    session = await open_session()
    sdp_port, peer, stranger = await udp(LOCAL), await udp(LOCAL), await udp(STRANGER)
    session.start(sdp_port.addr, PCMU, None, srtp=ours)
    far_end = SrtpStreams(theirs)
    protected = [far_end.protect(packet(seq, PEER_LEVEL, 0x1234)) for seq in range(20)]
    for data in protected:  # captured and replayed first
        stranger.send(data, session.local_port)
    await asyncio.sleep(0.1)
    for data in protected:
        peer.send(data, session.local_port)
    await frames(session, 15)
    stats = session.stats
    assert (stats.stranger, stats.srtp_rejected, stats.packets_received) == (20, 0, 20)
    assert session.remote == peer.addr
    await asyncio.sleep(0.05)
    assert stranger.drain() == 0


# ---- a SipEndpoint's call ----------------------------------------------------------------------------------


async def call_with_a_stranger(start_endpoint, sip_peer, udp, **config) -> tuple:
    """A scripted caller whose SDP names 127.0.0.1:<sdp_port>; after the 200 OK a stranger on 127.0.0.2 sprays
    the call's RTP port, then the caller sends from another port. -> (callee, call, heard frames, stranger, peer)"""
    calls: list = []

    async def on_call(call) -> None:
        calls.append(call)
        await call.closed.wait()

    callee = await start_endpoint(on_call, **config)
    signalling, sdp_port, peer, stranger = await sip_peer(), await udp(LOCAL), await udp(LOCAL), await udp(STRANGER)
    port, call_id = callee.local_address[1], secrets.token_hex(8)
    invite = sip_request(
        "INVITE", signalling.port, port, call_id=call_id, branch=secrets.token_hex(6), body=sdp_offer(sdp_port.addr[1])
    )
    signalling.send(invite, port)
    ok = await signalling.response(200)
    assert isinstance(ok, Response)
    match = re.search(rb"m=audio (\d+) ", ok.body)
    assert match is not None
    rtp_port = int(match.group(1))
    to_tag = (ok.headers.get("To") or "").split("tag=")[1]
    signalling.send(
        sip_request("ACK", signalling.port, port, call_id=call_id, branch=secrets.token_hex(6), to_tag=to_tag), port
    )
    for seq in range(20):
        stranger.send(packet(seq, STRANGER_LEVEL, 0x666), rtp_port)
    await asyncio.sleep(0.15)
    for seq in range(30):
        peer.send(packet(100 + seq, PEER_LEVEL, 0x1234), rtp_port)
    heard = await frames(calls[0], 20)
    await asyncio.sleep(0.1)
    return callee, calls[0], heard, stranger, peer


def scraped(endpoint, name: str) -> float:
    registry = CollectorRegistry()
    registry.register(TelephonyCollector(endpoint))
    for family in text_string_to_metric_families(generate_latest(registry).decode()):
        for sample in family.samples:
            if sample.name == name:
                return sample.value
    raise AssertionError(f"{name} is not on /metrics")


async def test_a_call_answered_by_the_endpoint_hears_only_its_caller(start_endpoint, sip_peer, udp) -> None:
    callee, call, heard, stranger, peer = await call_with_a_stranger(start_endpoint, sip_peer, udp)
    assert loudest(heard) < STRANGER_LEVEL // 2 and loudest(heard) > PEER_LEVEL // 2
    assert call.rtp_stats.stranger == 20 and call.rtp_stats.packets_received == 30
    assert scraped(callee, "voiceswarm_rtp_packets_stranger_total") == 20
    assert stranger.drain() == 0 and peer.drain() > 0


async def test_strict_rtp_off_in_the_endpoint_config_lets_the_stranger_in(start_endpoint, sip_peer, udp) -> None:
    _callee, call, heard, stranger, _peer = await call_with_a_stranger(start_endpoint, sip_peer, udp, strict_rtp=False)
    assert loudest(heard) > STRANGER_LEVEL // 2 and call.rtp_stats.stranger == 0
    assert stranger.drain() > 0


async def test_media_sources_in_the_endpoint_config_let_a_relay_in(start_endpoint, sip_peer, udp) -> None:
    _callee, call, heard, _stranger, _peer = await call_with_a_stranger(
        start_endpoint, sip_peer, udp, media_sources=("127.0.0.2/32",)
    )
    assert loudest(heard) > STRANGER_LEVEL // 2 and call.rtp_stats.stranger == 0


# ---- the [sip] keys ----------------------------------------------------------------------------------------


def load(tmp_path: Path, text: str):
    path = tmp_path / "voiceswarm.toml"
    path.write_text(text)
    return load_config(path, {})


def test_strict_by_default_with_no_media_sources(tmp_path: Path) -> None:
    config = load(tmp_path, "")
    endpoint = endpoint_config(config.sip)
    assert (config.sip.strict_rtp, config.sip.media_sources) == (True, [])
    assert (endpoint.strict_rtp, endpoint.media_sources) == (True, ())
    sources = MediaSources.parse(endpoint.media_sources, strict=endpoint.strict_rtp)
    assert sources.allows("127.0.0.1", "127.0.0.1") and sources.allows("::ffff:127.0.0.1", "127.0.0.1")
    assert not sources.allows("127.0.0.2", "127.0.0.1") and not sources.allows("127.0.0.2", None)


def test_media_sources_and_strict_rtp_reach_the_endpoint(tmp_path: Path) -> None:
    config = load(tmp_path, '[sip]\nmedia_sources = ["10.0.5.0/24", "2001:db8::7"]\nstrict_rtp = true\n')
    endpoint = endpoint_config(config.sip)
    assert endpoint.media_sources == ("10.0.5.0/24", "2001:db8::7") and endpoint.strict_rtp
    sources = MediaSources.parse(endpoint.media_sources)
    assert sources.allows("10.0.5.44", "192.0.2.1") and sources.allows("2001:db8::7", "192.0.2.1")
    assert not sources.allows("10.0.6.1", "192.0.2.1") and not sources.allows("2001:db8::8", "192.0.2.1")
    relaxed = endpoint_config(load(tmp_path, "[sip]\nstrict_rtp = false\n").sip)
    assert relaxed.strict_rtp is False
    assert MediaSources.parse((), strict=relaxed.strict_rtp).allows("198.51.100.9", "192.0.2.1")


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ('[sip]\nmedia_sources = ["10.0.5.300/24"]\n', r"sip\.media_sources: '10\.0\.5\.300/24' is not a network"),
        ("[sip]\nmedia_sources = [10]\n", r"sip\.media_sources: 10 is not a network"),
        ('[sip]\nmedia_sources = "10.0.5.0/24"\n', r"sip\.media_sources must be a list"),
        ('[sip]\nstrict_rtp = "no"\n', r"sip\.strict_rtp must be a bool"),
    ],
)
def test_bad_media_settings_name_the_key(tmp_path: Path, text: str, named: str) -> None:
    with pytest.raises(ConfigError, match=named):
        endpoint_config(load(tmp_path, text).sip)
