"""RTP media: packets, jitter buffer, DTMF, RTCP, ports, and RtpSessions talking over 127.0.0.1.

Real traffic comes from sipp's own captures (/usr/share/sip-tester: the 30 ms PCMA stream of `uac_pcap`
and its RFC 4733 DTMF trains), replayed from a plain UDP socket; crafted packets test what a capture
cannot (reordering, duplicates, loss, garbage).
"""

from __future__ import annotations

import asyncio
import itertools
import shutil
import socket
import struct
import wave
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import telephony.rtp as rtp_module
from harness.peers import free_sip_port, free_udp_port
from telephony.codec import PCMA, PCMU, Codec
from telephony.dtmf import DtmfDetector, TelephoneEvent
from telephony.g711 import alaw_decode, ulaw_decode, ulaw_encode
from telephony.jitter import JitterBuffer
from telephony.ports import PortRangeExhausted, allocate
from telephony.queues import DropOldestQueue
from telephony.rtcp import RR, SDES, SR, ReceptionStats, parse_compound, receiver_report, sender_report
from telephony.rtp import IntervalHistogram, RtpError, RtpSession
from telephony.rtp_packet import MalformedPacket, RtpPacket, parse
from telephony.sdp import Answer, answer
from telephony.srtp import SrtpKeys, SrtpPolicy, SrtpStreams

SIPP_PCAPS = Path("/usr/share/sip-tester")
LOCAL = "127.0.0.1"


# ---- helpers -----------------------------------------------------------------------------------------------


def sipp_capture(name: str) -> list[bytes]:
    """The UDP payloads of one of sipp's captures (classic little-endian pcap, Ethernet/IPv4/UDP)."""
    path = SIPP_PCAPS / name
    if not path.exists():
        pytest.skip(f"{path} missing: apt-get install sip-tester")
    data = path.read_bytes()
    assert struct.unpack_from("<I", data)[0] == 0xA1B2C3D4, "not a little-endian pcap"
    payloads, offset = [], 24
    while offset + 16 <= len(data):
        length = struct.unpack_from("<I", data, offset + 8)[0]
        frame = data[offset + 16 : offset + 16 + length]
        offset += 16 + length
        ip = frame[14:]
        if frame[12:14] == b"\x08\x00" and ip[9] == 17:  # IPv4, UDP
            udp = ip[(ip[0] & 0x0F) * 4 :]
            payloads.append(udp[8 : struct.unpack_from("!H", udp, 4)[0]])
    return payloads


def tone(freq: float, seconds: float, amplitude: int = 8000) -> np.ndarray:
    t = np.arange(int(8000 * seconds)) / 8000
    return (amplitude * np.sin(2 * np.pi * freq * t)).astype(np.int16)


def best_correlation(received: np.ndarray, reference: np.ndarray) -> float:
    """Pearson correlation of the reference with the stretch of `received` it lines up with best."""
    x = received.astype(np.float64)
    ref = reference.astype(np.float64)
    lag = int(np.argmax(np.correlate(x, ref, "valid")))
    return float(np.corrcoef(x[lag : lag + len(ref)], ref)[0, 1])


def mulaw(value: int) -> int:
    return int(ulaw_decode(ulaw_encode(np.array([value], np.int16)))[0])


def audio_packet(
    seq: int, ts: int, value: int, *, samples: int = 160, ssrc: int = 0x1234, marker: bool = False, pt: int = 0
) -> bytes:
    payload = ulaw_encode(np.full(samples, value, np.int16))
    return RtpPacket(pt, seq, ts, ssrc, payload, marker).to_bytes()


async def take(stream, count: int, timeout: float = 3.0) -> list:
    items = []
    async with asyncio.timeout(timeout):
        async for item in stream:
            items.append(item)
            if len(items) == count:
                break
    return items


class Peer(asyncio.DatagramProtocol):
    """A plain UDP socket on 127.0.0.1 that sends crafted datagrams and records what arrives."""

    def __init__(self) -> None:
        self.inbox: asyncio.Queue[tuple[bytes, tuple]] = asyncio.Queue()
        self.transport: asyncio.DatagramTransport | None = None

    def connection_made(self, transport) -> None:
        self.transport = transport

    def datagram_received(self, data: bytes, addr: tuple) -> None:
        self.inbox.put_nowait((data, addr))

    @property
    def addr(self) -> tuple[str, int]:
        assert self.transport is not None
        return self.transport.get_extra_info("sockname")[:2]

    def send(self, data: bytes, port: int) -> None:
        assert self.transport is not None
        self.transport.sendto(data, (LOCAL, port))

    async def packets(self, count: int, timeout: float = 2.0) -> list[RtpPacket]:
        async with asyncio.timeout(timeout):
            return [parse((await self.inbox.get())[0]) for _ in range(count)]

    def drain(self) -> int:
        count = 0
        while not self.inbox.empty():
            self.inbox.get_nowait()
            count += 1
        return count


@pytest.fixture
async def open_session():
    sessions: list[RtpSession] = []

    async def opener(**options) -> RtpSession:
        session = await RtpSession.open(LOCAL, (20000, 30000), **options)
        sessions.append(session)
        return session

    yield opener
    for session in sessions:
        await session.close()


@pytest.fixture
async def open_peer():
    transports = []

    async def opener(sock: socket.socket | None = None) -> Peer:
        loop = asyncio.get_running_loop()
        where = {"sock": sock} if sock else {"local_addr": (LOCAL, 0)}
        transport, peer = await loop.create_datagram_endpoint(Peer, **where)
        transports.append(transport)
        return peer

    yield opener
    for transport in transports:
        transport.close()


async def pair(open_session, codec: Codec = PCMU, **options) -> tuple[RtpSession, RtpSession]:
    a, b = await open_session(**options), await open_session(**options)
    a.start((LOCAL, b.local_port), codec, 101)
    b.start((LOCAL, a.local_port), codec, 101)
    return a, b


# ---- RTP packets -------------------------------------------------------------------------------------------


def test_packet_round_trip_with_every_header_field() -> None:
    packet = RtpPacket(
        8,
        65535,
        0xFFFFFFFF,
        0xDEADBEEF,
        b"\xd5" * 160,
        marker=True,
        csrc=(1, 2, 3),
        extension=(0xBEDE, b"\x10\xff\x00\x00"),
        padding=4,
    )
    data = packet.to_bytes()
    assert len(data) == 12 + 12 + 8 + 160 + 4 and data[0] == 0x80 | 0x20 | 0x10 | 3
    assert parse(data) == packet


@pytest.mark.parametrize(
    "data, message",
    [
        (b"\x80\x00\x00", "shorter than an RTP header"),
        (bytes([0x40]) + bytes(11), "version 1"),
        (bytes([0xA0]) + bytes(10) + b"\x20", "padding count 32"),
        (bytes([0xA0]) + bytes(11) + b"\x00", "padding count 0"),
        (bytes([0x83]) + bytes(11) + bytes(8), "CSRC list"),
        (bytes([0x90]) + bytes(11) + b"\x00\x01", "extension"),
        (bytes([0x90]) + bytes(11) + b"\xbe\xde\x00\x02" + bytes(4), "extension"),
    ],
)
def test_malformed_packets_raise_malformed_packet(data: bytes, message: str) -> None:
    with pytest.raises(MalformedPacket, match=message):
        parse(data)


@given(st.binary(max_size=80))
def test_any_bytes_parse_or_raise_only_malformed_packet(data: bytes) -> None:
    try:
        packet = parse(data)
    except MalformedPacket:
        return
    assert len(packet.payload) <= len(data) - 12


# ---- jitter buffer -----------------------------------------------------------------------------------------


def pk(seq: int) -> RtpPacket:
    return RtpPacket(0, seq & 0xFFFF, seq * 160, 1, b"")


def seqs(released: list[tuple[RtpPacket, int]]) -> list[int]:
    return [packet.seq for packet, _ in released]


def test_jitter_buffer_passes_in_order_packets_at_once() -> None:
    buffer = JitterBuffer(depth=3)
    assert [seqs(buffer.push(pk(n))) for n in (10, 11, 12)] == [[10], [11], [12]]


def test_jitter_buffer_reorders_and_drops_duplicates() -> None:
    buffer = JitterBuffer(depth=3)
    out = [seqs(buffer.push(pk(n))) for n in (1, 3, 2, 2, 3, 4)]
    assert out == [[1], [], [2, 3], [], [], [4]]
    assert (buffer.reordered, buffer.duplicate, buffer.lost, buffer.late) == (1, 2, 0, 0)


def test_jitter_buffer_declares_loss_after_depth_packets_and_counts_late_ones() -> None:
    buffer = JitterBuffer(depth=2)
    buffer.push(pk(1))
    assert buffer.push(pk(3)) == [] and buffer.push(pk(4)) == []
    released = buffer.push(pk(5))  # three held > depth 2: packet 2 is given up
    assert seqs(released) == [3, 4, 5] and [missing for _, missing in released] == [1, 0, 0]
    assert buffer.push(pk(2)) == [] and (buffer.lost, buffer.late) == (1, 1)


def test_jitter_buffer_wraps_and_restarts_on_a_new_sequence() -> None:
    buffer = JitterBuffer()
    assert [seqs(buffer.push(pk(n))) for n in (65534, 65535, 65536, 65537)] == [[65534], [65535], [0], [1]]
    assert seqs(buffer.push(pk(30000))) == [30000] and buffer.restarts == 1


@given(st.lists(st.integers(0, 40), max_size=200), st.integers(0, 5))
def test_jitter_buffer_output_is_ordered_unique_and_bounded(arrivals: list[int], depth: int) -> None:
    buffer = JitterBuffer(depth)
    released: list[int] = []
    for seq in arrivals:
        released += seqs(buffer.push(pk(1000 + seq)))
        assert len(buffer._held) <= depth + 1
    assert released == sorted(set(released))


# ---- DTMF and RTCP units -------------------------------------------------------------------------------------


def test_sipp_dtmf_capture_gives_one_digit_per_key_press() -> None:
    detector = DtmfDetector()
    for press, (digit, name) in enumerate((("5", "5"), ("#", "pound"), ("5", "5"))):
        packets = [parse(data) for data in sipp_capture(f"dtmf_2833_{name}.pcap")]
        assert len(packets) == 10 and sum(TelephoneEvent.parse(p.payload).end for p in packets) == 3
        got = [detector.feed(p.timestamp + press * 8000, p.payload) for p in packets]  # one press, one timestamp
        assert [g for g in got if g] == [digit]


def test_telephone_event_round_trip_and_short_payload() -> None:
    event = TelephoneEvent(11, True, 10, 800)
    assert TelephoneEvent.parse(event.to_bytes()) == event and event.to_bytes() == b"\x0b\x8a\x03\x20"
    with pytest.raises(MalformedPacket):
        TelephoneEvent.parse(b"\x01\x02")


def test_rtcp_reports_parse_back() -> None:
    stats = ReceptionStats()
    for seq in (100, 101, 103, 104):  # one lost
        stats.update(seq, seq * 160, seq * 0.02, audio=True)
    block = stats.report_block(0xABCD, 1.0)
    ssrc, lost_word, highest = struct.unpack_from("!III", block)
    assert (ssrc, lost_word >> 24, lost_word & 0xFFFFFF, highest) == (0xABCD, 256 // 5, 1, 104)
    report = sender_report(7, 1_700_000_000.5, 1234, 10, 1600, [block], "agent@127.0.0.1")
    packets = parse_compound(report)
    assert [(p.packet_type, p.ssrc) for p in packets] == [(SR, 7), (SDES, 7)]
    assert packets[0].ntp_middle == ((1_700_000_000 + 2208988800) & 0xFFFF) << 16 | 0x8000
    assert [p.packet_type for p in parse_compound(receiver_report(7, [], "x"))] == [RR, SDES]
    for broken in (report[:20], b"\x00" * 8, report[:-1], b""):
        with pytest.raises(MalformedPacket):
            parse_compound(broken)


def test_reception_jitter_follows_rfc3550() -> None:
    steady, shaky = ReceptionStats(), ReceptionStats()
    for n in range(200):
        steady.update(n, n * 160, n * 0.02, audio=True)
        shaky.update(n, n * 160, n * 0.02 + (0.01 if n % 2 else 0.0), audio=True)
    assert steady.jitter_ms == pytest.approx(0.0, abs=1e-6)
    assert shaky.jitter_ms == pytest.approx(10.0, rel=0.05)  # |D| is 10 ms every packet


def test_interval_histogram_percentiles() -> None:
    histogram = IntervalHistogram()
    for ms in [20.0] * 98 + [25.0, 90.0]:
        histogram.add(ms)
    assert histogram.percentile(50) == pytest.approx(20.1)
    assert histogram.percentile(99) == pytest.approx(25.1) and histogram.max_ms == 90.0


# ---- ports and queues -------------------------------------------------------------------------------------


def test_ports_are_an_even_rtp_port_and_the_next_for_rtcp() -> None:
    rtp, rtcp = allocate(LOCAL, (30001, 30011))
    try:
        port = rtp.getsockname()[1]
        assert port % 2 == 0 and 30002 <= port <= 30010 and rtcp.getsockname()[1] == port + 1
    finally:
        rtp.close()
        rtcp.close()


def test_a_full_port_range_raises_port_range_exhausted() -> None:
    held = [allocate(LOCAL, (30020, 30023)) for _ in range(2)]
    try:
        with pytest.raises(PortRangeExhausted, match="30020-30023"):
            allocate(LOCAL, (30020, 30023))
        blocker = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        blocker.bind((LOCAL, 30031))  # the odd port of the only pair taken: the even one must not leak
        with pytest.raises(PortRangeExhausted):
            allocate(LOCAL, (30030, 30031))
        probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        probe.bind((LOCAL, 30030))
        probe.close()
        blocker.close()
    finally:
        for rtp, rtcp in held:
            rtp.close()
            rtcp.close()
    with pytest.raises(ValueError, match="no even/odd port pair"):
        allocate(LOCAL, (30041, 30041))


async def test_drop_oldest_queue_keeps_the_newest_and_ends_after_close() -> None:
    queue: DropOldestQueue[int] = DropOldestQueue(3)
    for n in range(5):
        queue.put(n)
    queue.close()
    queue.put(99)
    assert [n async for n in queue] == [2, 3, 4] and queue.dropped == 2


# ---- sessions over loopback -----------------------------------------------------------------------------


@pytest.mark.slow  # a second of paced audio
@pytest.mark.parametrize("codec", [PCMU, PCMA])
async def test_a_tone_arrives_intact_in_20ms_frames(open_session, codec: Codec) -> None:
    a, b = await pair(open_session, codec)
    sent = tone(440, 1.0)
    a.play(sent)
    frames = await take(b.audio_in, 75)
    assert all(frame.dtype == np.int16 and frame.shape == (160,) for frame in frames)
    assert best_correlation(np.concatenate(frames), sent) > 0.99
    await a.wait_played()
    assert not a.playing and a.played_samples == len(sent) and a.stats.packets_sent >= 50


async def test_silence_is_delivered_as_frames_not_dropped(open_session) -> None:
    _a, b = await pair(open_session)
    frames = await take(b.audio_in, 25)  # nobody plays: comfort silence, still a frame every 20 ms
    assert len(frames) == 25 and all(not frame.any() for frame in frames)


async def test_flush_stops_playback_at_once(open_session) -> None:
    a, b = await pair(open_session)
    played: list[bool] = []
    a.on_played = lambda: played.append(True)
    a.play(tone(440, 5.0))
    await take(b.audio_in, 10)
    assert a.playing
    a.flush()
    sent_before_flush = a.played_samples
    assert not a.playing and played == [True] and 0 < sent_before_flush < 5 * 8000
    await asyncio.wait_for(a.wait_played(), 0.1)
    await asyncio.sleep(0.1)  # what was in flight
    for _ in range(len(b.audio_in)):
        await anext(b.audio_in)
    after = await take(b.audio_in, 10)
    assert all(not frame.any() for frame in after) and a.played_samples == sent_before_flush


async def test_sent_packets_have_continuous_headers_and_marker_after_silence(open_session, open_peer) -> None:
    session, peer = await open_session(), await open_peer()
    session.start(peer.addr, PCMA, 101)
    silence = await peer.packets(3)
    session.play(tone(440, 0.1))
    packets = silence + await peer.packets(8)
    assert len({p.ssrc for p in packets}) == 1 and {p.payload_type for p in packets} == {8}
    assert [(b.seq - a.seq) & 0xFFFF for a, b in itertools.pairwise(packets)] == [1] * 10
    assert [(b.timestamp - a.timestamp) & 0xFFFFFFFF for a, b in itertools.pairwise(packets)] == [160] * 10
    assert silence[0].payload == bytes([PCMA.silence]) * 160
    first_audio = next(i for i, p in enumerate(packets) if p.payload != silence[0].payload)
    assert [p.marker for p in packets[first_audio : first_audio + 5]] == [True, False, False, False, False]
    assert all(len(p.payload) == 160 for p in packets)


async def test_symmetric_rtp_latches_to_where_media_really_comes_from(open_session, open_peer) -> None:
    session, sdp_address, nat_side, intruder = (
        await open_session(),
        await open_peer(),
        await open_peer(),
        await open_peer(),
    )
    session.start(sdp_address.addr, PCMU, None)
    await sdp_address.packets(2)  # before any media arrives we send where the SDP said
    for n in range(3):
        nat_side.send(audio_packet(n, n * 160, 1000), session.local_port)
    await nat_side.packets(3)
    assert session.remote == nat_side.addr
    sdp_address.drain()
    await asyncio.sleep(0.1)
    assert sdp_address.drain() == 0
    intruder.send(audio_packet(3, 480, 1000), session.local_port)
    await asyncio.sleep(0.05)
    assert session.stats.foreign == 1 and session.stats.packets_received == 3 and session.remote == nat_side.addr


async def test_update_remote_redirects_media_and_relatches(open_session, open_peer) -> None:
    session, first, second = await open_session(), await open_peer(), await open_peer()
    session.start(first.addr, PCMU, None)
    await first.packets(1)
    session.update_remote(second.addr)
    await second.packets(2)
    with pytest.raises(RtpError, match="IP address"):
        session.update_remote(("pbx.example.com", 4000))


async def test_jitter_buffer_in_a_session_reorders_drops_duplicates_and_conceals(open_session, open_peer) -> None:
    session, peer = await open_session(jitter_depth=2), await open_peer()
    session.start(peer.addr, PCMU, None)
    # packet n carries the constant sample 100 * n; 6 is lost, 3 and 4 swapped, 2 sent twice
    for n in (1, 2, 2, 4, 3, 5, 7, 8, 9, 10):
        peer.send(audio_packet(n, n * 160, 100 * n), session.local_port)
    frames = await take(session.audio_in, 10)
    levels = [int(np.median(frame)) for frame in frames]
    assert levels[:5] == [mulaw(100 * n) for n in range(1, 6)]
    assert frames[5][0] == mulaw(500) and 0 < frames[5][-1] < frames[5][0]  # 6 is lost: 5 repeated, fading
    assert levels[6:] == [mulaw(100 * n) for n in range(7, 11)]
    stats = session.stats
    assert (stats.duplicate, stats.reordered, stats.lost, stats.concealed_samples) == (1, 1, 1, 160)
    assert stats.packets_received == 10


async def test_sipp_30ms_pcma_capture_is_reframed_to_exact_20ms_frames(open_session, open_peer) -> None:
    capture = sipp_capture("g711a.pcap")
    session, peer = await open_session(audio_queue=400), await open_peer()
    session.start(peer.addr, PCMA, 101)
    for data in capture:
        assert len(parse(data).payload) == 240
        peer.send(data, session.local_port)
        await asyncio.sleep(0.001)
    expected = alaw_decode(b"".join(parse(data).payload for data in capture))
    frames = await take(session.audio_in, len(expected) // 160)
    assert all(frame.shape == (160,) for frame in frames)
    assert np.array_equal(np.concatenate(frames), expected[: len(frames) * 160])
    assert session.stats.lost == 0 and session.stats.packets_received == len(capture)


async def test_sipp_dtmf_trains_give_one_event_per_key_press(open_session, open_peer) -> None:
    session, peer = await open_session(), await open_peer()
    session.start(peer.addr, PCMA, 101)
    presses = ["1", "5", "5", "#", "*", "9"]
    seq, ts = 100, 1000
    for digit in presses:  # sipp's trains, renumbered into one stream as a phone would send them
        name = {"#": "pound", "*": "star"}.get(digit, digit)
        for data in sipp_capture(f"dtmf_2833_{name}.pcap"):
            packet = parse(data)
            packet.seq, packet.timestamp = seq, ts
            peer.send(packet.to_bytes(), session.local_port)
            seq += 1
        peer.send(audio_packet(seq, ts + 1600, 0, pt=8), session.local_port)
        seq, ts = seq + 1, ts + 3200
        await asyncio.sleep(0.01)
    assert await take(session.dtmf_in, len(presses)) == presses
    await asyncio.sleep(0.05)
    assert len(session.dtmf_in) == 0 and session.stats.dtmf_received == len(presses)


async def test_send_dtmf_sends_a_proper_rfc4733_train(open_session, open_peer) -> None:
    session, peer = await open_session(), await open_peer()
    session.start(peer.addr, PCMU, 101)
    await peer.packets(1)
    peer.drain()
    await session.send_dtmf("7", duration_ms=100)
    packets = [p for p in await peer.packets(9) if p.payload_type == 101]
    events = [TelephoneEvent.parse(p.payload) for p in packets]
    assert [e.event for e in events] == [7] * 7 and len({p.timestamp for p in packets}) == 1
    assert [e.duration for e in events] == [160, 320, 480, 640, 800, 800, 800]
    assert [e.end for e in events] == [False] * 4 + [True] * 3
    assert [p.marker for p in packets] == [True] + [False] * 6
    with pytest.raises(ValueError, match="DTMF digit"):
        await session.send_dtmf("X")


async def test_dtmf_between_two_sessions_arrives_once(open_session) -> None:
    a, b = await pair(open_session)
    a.play(tone(440, 0.5))
    await a.send_dtmf("#")
    await a.send_dtmf("#")
    assert await take(b.dtmf_in, 2) == ["#", "#"]
    await asyncio.sleep(0.1)
    assert len(b.dtmf_in) == 0


async def test_bad_packets_are_counted_and_ignored(open_session, open_peer) -> None:
    session, peer = await open_session(), await open_peer()
    session.start(peer.addr, PCMU, 101)
    garbage = [
        b"\x80",
        b"\x00",
        b"hello world, not rtp",
        bytes([0x40]) + bytes(20),
        bytes([0xA0]) + bytes(11) + b"\xff",
        bytes([0x8F]) + bytes(15),
        RtpPacket(101, 1, 0, 0x1234, b"\x01").to_bytes(),
    ]  # short DTMF payload
    for data in garbage:
        peer.send(data, session.local_port)
    peer.send(audio_packet(50, 160, 0, pt=13), session.local_port)  # comfort noise was not negotiated
    peer.send(bytes([0x80, 200, 0, 1]) + bytes(4), session.local_port)  # RTCP on the RTP port, cut short
    for n in range(2, 5):
        peer.send(audio_packet(n, n * 160, 1000), session.local_port)
    frames = await take(session.audio_in, 3)
    assert [int(np.median(f)) for f in frames] == [mulaw(1000)] * 3
    stats = session.stats
    assert (stats.malformed, stats.wrong_payload, stats.packets_received) == (len(garbage) + 1, 1, 4)


rtp_datagrams = st.builds(
    lambda pt, seq, ts, ssrc, payload, marker: RtpPacket(pt, seq, ts, ssrc, payload, marker).to_bytes(),
    st.sampled_from([0, 8, 13, 101]),
    st.integers(0, 0xFFFF),
    st.integers(0, 0xFFFFFFFF),
    st.sampled_from([1, 2]),
    st.binary(max_size=400),
    st.booleans(),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(rtp_datagrams | st.binary(max_size=40), max_size=60))
def test_any_datagram_stream_is_survived_and_frames_stay_160_samples(datagrams: list[bytes]) -> None:
    async def run() -> None:
        session = await RtpSession.open(LOCAL, (20000, 30000), audio_queue=50)
        try:
            session.start((LOCAL, 9), PCMU, 101)
            for data in datagrams:  # straight into what the transports call per datagram: no UDP round trip
                session._on_rtp(data, (LOCAL, 40000))
                session._on_rtcp(data, (LOCAL, 40001))
            assert len(session.audio_in) <= 50
            while len(session.audio_in):
                assert (await anext(session.audio_in)).shape == (160,)
        finally:
            await session.close()

    asyncio.run(run())


async def test_media_timeout_fires_when_nothing_arrives(open_session) -> None:
    fired: list[bool] = []
    a, b = await pair(open_session, no_media_timeout=0.5)
    silent = await open_session(no_media_timeout=0.5)
    silent.start((LOCAL, 9), PCMU, None)  # nobody sends to this one
    silent.on_media_timeout = lambda: fired.append(True)
    await asyncio.wait_for(silent.media_timeout.wait(), 2.0)
    assert fired == [True]
    assert not a.media_timeout.is_set() and not b.media_timeout.is_set()  # both still hear each other


async def test_hold_stops_sending_but_keeps_the_socket(open_session, open_peer) -> None:
    session, peer = await open_session(), await open_peer()
    session.start(peer.addr, PCMU, 101)
    session.play(tone(440, 2.0))
    await peer.packets(3)
    session.set_direction("recvonly")
    await asyncio.sleep(0.05)
    peer.drain()
    await asyncio.sleep(0.2)
    assert peer.drain() == 0 and session.playing  # playback waits for the call to come off hold
    with pytest.raises(RtpError, match="recvonly"):
        await session.send_dtmf("1")
    peer.send(audio_packet(1, 160, 500), session.local_port)
    assert len(await take(session.audio_in, 1)) == 1  # still receiving
    session.set_direction("sendrecv")
    resumed = await peer.packets(2)
    assert resumed[0].marker and resumed[0].payload != bytes([PCMU.silence]) * 160
    with pytest.raises(ValueError, match="direction"):
        session.set_direction("hold")


async def test_a_slow_consumer_loses_the_oldest_frames(open_session, open_peer) -> None:
    session, peer = await open_session(audio_queue=5), await open_peer()
    session.start(peer.addr, PCMU, None)
    for n in range(12):
        peer.send(audio_packet(n, n * 160, 100 * n), session.local_port)
    await asyncio.sleep(0.1)
    frames = await take(session.audio_in, 5)
    assert [int(np.median(f)) for f in frames] == [mulaw(100 * n) for n in range(7, 12)]
    assert session.stats.frames_dropped == 7


async def test_rtcp_reports_go_out_and_come_in(open_session, open_peer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rtp_module, "RTCP_INTERVAL", 0.1)
    rtp_sock, rtcp_sock = allocate(LOCAL, (31000, 32000))  # a peer with RTCP on RTP + 1, as RFC 3550 has it
    session, peer, rtcp_peer = await open_session(), await open_peer(sock=rtp_sock), await open_peer(sock=rtcp_sock)
    session.start(peer.addr, PCMU, None)
    peer.send(audio_packet(1, 160, 0, ssrc=0x55), session.local_port)
    await asyncio.sleep(0.2)
    async with asyncio.timeout(2):
        report, _ = await rtcp_peer.inbox.get()
    types = [p.packet_type for p in parse_compound(report)]
    assert types == [SR, SDES]
    rtcp_peer.send(sender_report(0x55, 1e9, 0, 1, 160, [], "peer"), session.local_port + 1)
    rtcp_peer.send(b"\x80\xc8\x00\x09junk", session.local_port + 1)
    await asyncio.sleep(0.05)
    assert session.stats.rtcp_received == 1 and session.stats.malformed == 1 and session.stats.rtcp_sent >= 1


async def test_play_rejects_what_is_not_16_bit_pcm(open_session) -> None:
    session = await open_session()
    with pytest.raises(ValueError, match="int16"):
        session.play(np.zeros(160, np.float32))
    with pytest.raises(ValueError, match="odd"):
        session.play(b"\x00\x01\x02")
    with pytest.raises(RtpError, match="started"):
        await session.send_dtmf("1")


async def test_audio_played_after_close_is_not_waited_for(open_session) -> None:
    # A caller that spoke after the other side hung up waited for wait_played() forever (a benchmark's call hung).
    a, _ = await pair(open_session)
    await a.close()
    a.play(tone(440, 0.5))
    await asyncio.wait_for(a.wait_played(), 1.0)
    assert not a.playing


async def test_close_leaves_no_task_and_frees_the_port(open_session) -> None:
    before = asyncio.all_tasks()
    a, b = await pair(open_session)
    a.play(tone(440, 1.0))
    pending_dtmf = asyncio.create_task(a.send_dtmf("3"))
    reader = asyncio.create_task(take(b.audio_in, 10_000, timeout=5))
    await asyncio.sleep(0.1)
    await a.close()
    await b.close()
    with pytest.raises(RtpError, match="closed"):
        await pending_dtmf
    assert len(await reader) > 0  # the iterator ended with the session
    await a.wait_played()
    assert asyncio.all_tasks() == before
    sent = a.stats.packets_sent
    await asyncio.sleep(0.1)
    assert a.stats.packets_sent == sent  # the 20 ms timer is gone too
    await asyncio.sleep(0)  # transports finish closing on the next loop pass
    for port in (a.local_port, a.local_port + 1, b.local_port):
        probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        probe.bind((LOCAL, port))
        probe.close()
    with pytest.raises(RtpError, match="closed"):
        a.start((LOCAL, b.local_port), PCMU)


# ---- a real peer: baresip ------------------------------------------------------------------------------------


def chirp(f0: float, f1: float, seconds: float) -> np.ndarray:
    """A sweep: unlike a steady tone it lines up with itself at one lag only."""
    t = np.arange(int(8000 * seconds)) / 8000
    return (8000 * np.sin(2 * np.pi * (f0 * t + (f1 - f0) * t * t / (2 * seconds)))).astype(np.int16)


class ScriptedAnswerer(asyncio.DatagramProtocol):
    """Just enough SIP to get baresip's media flowing: 200 OK with our SDP answer to INVITE, 200 OK to BYE.

    Test scaffolding, not a user agent (no transactions, no retransmission); the SIP stack lives elsewhere.
    """

    def __init__(self, session: RtpSession, port: int, codecs: tuple[str, ...]) -> None:
        self.session, self.port, self.codecs = session, port, codecs
        self.answered: Answer | None = None
        self.call_started, self.bye = asyncio.Event(), asyncio.Event()
        self.transport: asyncio.DatagramTransport | None = None

    def connection_made(self, transport) -> None:
        self.transport = transport

    def datagram_received(self, data: bytes, addr: tuple) -> None:
        head, _, body = data.decode().partition("\r\n\r\n")
        start, *headers = head.split("\r\n")
        keep = [h for h in headers if h.split(":")[0].strip().lower() in ("via", "from", "to", "call-id", "cseq")]
        keep = [h + ";tag=scripted" if h.lower().startswith("to:") and "tag=" not in h else h for h in keep]
        method = start.split()[0]
        extra: list[str] = []
        content = ""
        if method == "INVITE":
            if self.answered is None:
                self.answered = answer(body, LOCAL, self.session.local_port, codecs=self.codecs)
                self.session.start(
                    self.answered.remote, self.answered.codec, self.answered.dtmf_pt, self.answered.direction
                )
                self.call_started.set()
            content = self.answered.sdp
            extra = [f"Contact: <sip:agent@{LOCAL}:{self.port}>", "Content-Type: application/sdp"]
        elif method == "BYE":
            self.bye.set()
        elif method == "ACK":
            return
        response = "\r\n".join(
            ["SIP/2.0 200 OK", *keep, *extra, f"Content-Length: {len(content.encode())}", "", content]
        )
        assert self.transport is not None
        self.transport.sendto(response.encode(), addr)


def write_wav(path: Path, pcm: np.ndarray) -> None:
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(8000)
        out.writeframes(pcm.astype("<i2").tobytes())


BARESIP_CONFIG = """poll_method epoll
sip_listen {local}:{sip_port}
audio_player aufile,{folder}/played.wav
audio_source aufile,{folder}/caller.wav
audio_alert aufile,{folder}/alert.wav
rtp_ports 40000-40998
module_path /usr/lib/baresip/modules
module stdio.so
module g711.so
module aufile.so
module sndfile.so
snd_path {folder}
module_app account.so
module_app contact.so
module_app menu.so
"""


@pytest.mark.peers
@pytest.mark.skipif(shutil.which("baresip") is None, reason="apt-get install baresip-core")
@pytest.mark.parametrize("codecs", [("PCMU",), ("PCMA",)])
async def test_baresip_call_carries_audio_both_ways_and_our_dtmf(
    open_session, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, codecs: tuple[str, ...]
) -> None:
    monkeypatch.setattr(rtp_module, "RTCP_INTERVAL", 0.5)  # so that baresip gets our reports during the call
    theirs, ours = chirp(300, 3000, 2.0), chirp(3000, 300, 1.5)
    write_wav(tmp_path / "caller.wav", np.concatenate([theirs, np.zeros(8000, np.int16)]))  # the call ends with it
    sip_port = free_udp_port()
    (tmp_path / "config").write_text(BARESIP_CONFIG.format(local=LOCAL, sip_port=free_sip_port(), folder=tmp_path))
    (tmp_path / "accounts").write_text(f"<sip:caller@{LOCAL}>;regint=0\n")
    (tmp_path / "contacts").write_text("")
    session = await open_session()
    loop = asyncio.get_running_loop()
    transport, answerer = await loop.create_datagram_endpoint(
        lambda: ScriptedAnswerer(session, sip_port, codecs), local_addr=(LOCAL, sip_port)
    )
    heard: list[np.ndarray] = []

    async def listen() -> None:
        async for frame in session.audio_in:
            heard.append(frame)

    listener = asyncio.create_task(listen())
    baresip = await asyncio.create_subprocess_exec(
        "baresip",
        "-f",
        str(tmp_path),
        "-n",
        LOCAL,
        "-e",
        f"/dial sip:agent@{LOCAL}:{sip_port}",
        "-t",
        "20",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    try:
        await asyncio.wait_for(answerer.call_started.wait(), 5)
        session.play(ours)
        await asyncio.wait_for(session.wait_played(), 5)
        await session.send_dtmf("5")
        await session.send_dtmf("#")
        await asyncio.wait_for(answerer.bye.wait(), 8)
        baresip.terminate()  # it would idle until -t runs out; it exits cleanly on SIGTERM
        output = (await asyncio.wait_for(baresip.communicate(), 10))[0].decode(errors="replace")
    finally:
        if baresip.returncode is None:
            baresip.kill()
            await baresip.wait()
        transport.close()
    await session.close()
    await listener
    assert answerer.answered is not None and answerer.answered.codec.name == codecs[0]
    assert best_correlation(np.concatenate(heard), theirs) > 0.95
    [recording] = tmp_path.glob("*dec*.wav")  # what baresip decoded from our stream
    with wave.open(str(recording)) as played:
        assert played.getframerate() == 8000
        received = np.frombuffer(played.readframes(played.getnframes()), "<i2")
    assert best_correlation(received, ours) > 0.95
    assert output.count("received event: '5' (end=1)") == 1 and output.count("received event: '#' (end=1)") == 1
    stats = session.stats
    assert stats.rtcp_received >= 1 and stats.malformed == 0 and stats.lost == 0


@pytest.mark.peers
@pytest.mark.skipif(shutil.which("sipp") is None, reason="apt-get install sip-tester")
async def test_sipp_uac_pcap_call_is_heard_in_exact_20ms_frames_with_its_dtmf(open_session, tmp_path: Path) -> None:
    """sipp's built-in `uac_pcap` caller streams its 30 ms PCMA capture, then a DTMF '1', then hangs up."""
    capture = sipp_capture("g711a.pcap")
    (tmp_path / "pcap").mkdir()
    for name in ("g711a.pcap", "dtmf_2833_1.pcap"):  # sipp reads them relative to its working directory
        shutil.copy(SIPP_PCAPS / name, tmp_path / "pcap" / name)
    session = await open_session()
    sip_port = free_udp_port()
    loop = asyncio.get_running_loop()
    transport, answerer = await loop.create_datagram_endpoint(
        lambda: ScriptedAnswerer(session, sip_port, ("PCMA",)), local_addr=(LOCAL, sip_port)
    )
    heard: list[np.ndarray] = []

    async def listen() -> None:
        async for frame in session.audio_in:
            heard.append(frame)

    listener = asyncio.create_task(listen())
    sipp = await asyncio.create_subprocess_exec(
        "sipp",
        "-sn",
        "uac_pcap",
        f"{LOCAL}:{sip_port}",
        "-i",
        LOCAL,
        "-p",
        str(free_udp_port()),
        "-mp",
        str(free_udp_port() & ~1),
        "-m",
        "1",
        "-nostdin",
        "-timeout",
        "30",
        cwd=tmp_path,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    try:
        digits = await take(session.dtmf_in, 1, timeout=20)
        await asyncio.wait_for(answerer.bye.wait(), 5)
        assert await asyncio.wait_for(sipp.wait(), 10) == 0
    finally:
        if sipp.returncode is None:
            sipp.kill()
            await sipp.wait()
        transport.close()
    await session.close()
    await listener
    expected = alaw_decode(b"".join(parse(data).payload for data in capture))
    whole = len(expected) // 160 * 160
    assert all(frame.shape == (160,) for frame in heard) and digits == ["1"]
    assert np.array_equal(np.concatenate(heard)[:whole], expected[:whole])  # not a sample lost, added or moved
    assert session.stats.dtmf_received == 1 and session.stats.malformed == 0


# ---- SRTP ----------------------------------------------------------------------------------------------------

SUITE_80 = "AES_CM_128_HMAC_SHA1_80"


def srtp_keys(suite: str = SUITE_80) -> tuple[SrtpKeys, SrtpKeys]:
    """Mirrored keys for two ends of a call, as an offer/answer gives them."""
    first, second = SrtpPolicy("offer").key(suite), SrtpPolicy("offer").key(suite)
    return SrtpKeys(suite, first, second), SrtpKeys(suite, second, first)


@pytest.mark.parametrize("suite, tag_bytes", [(SUITE_80, 10), ("AES_CM_128_HMAC_SHA1_32", 4)])
async def test_srtp_tone_round_trip_and_the_wire_is_not_plain(
    open_session, open_peer, suite: str, tag_bytes: int
) -> None:
    ours, theirs = srtp_keys(suite)
    session, peer = await open_session(), await open_peer()
    session.start(peer.addr, PCMU, 101, srtp=ours)
    sent = tone(440, 0.6)
    session.play(sent)
    wire = [(await peer.inbox.get())[0] for _ in range(30)]
    assert session.srtp_suite == suite
    assert {len(data) for data in wire} == {12 + 160 + tag_bytes}
    far_end = SrtpStreams(theirs)
    plain = [parse(far_end.unprotect(data)) for data in wire]
    assert all(parse(data).payload != packet.payload for data, packet in zip(wire, plain, strict=True))  # encrypted
    heard = np.concatenate([ulaw_decode(packet.payload) for packet in plain])
    assert best_correlation(heard, sent[:1600]) > 0.99
    # and back: what the far end protects, the session hears
    for n in range(40):
        packet = RtpPacket(0, 100 + n, 160 * n, 0x4321, ulaw_encode(sent[160 * n : 160 * n + 160]))
        peer.send(far_end.protect(packet.to_bytes()), session.local_port)
    frames = await take(session.audio_in, 30)  # the jitter buffer holds the last few back
    assert best_correlation(np.concatenate(frames), sent[:4800]) > 0.99
    assert session.stats.srtp_rejected == 0 and session.stats.packets_received == 40


@pytest.mark.slow  # a second of paced audio
async def test_srtp_between_two_sessions_carries_audio(open_session) -> None:
    a, b = await open_session(), await open_session()
    keys_a, keys_b = srtp_keys()
    a.start((LOCAL, b.local_port), PCMU, 101, srtp=keys_a)
    b.start((LOCAL, a.local_port), PCMU, 101, srtp=keys_b)
    sent = tone(700, 1.0)
    a.play(sent)
    frames = await take(b.audio_in, 75)
    assert best_correlation(np.concatenate(frames), sent) > 0.99
    assert b.stats.srtp_rejected == 0


async def test_tampered_replayed_and_plain_packets_are_dropped_and_counted(open_session, open_peer) -> None:
    ours, theirs = srtp_keys()
    session, peer = await open_session(), await open_peer()
    session.start(peer.addr, PCMU, 101, srtp=ours)
    far_end = SrtpStreams(theirs)
    protected = [far_end.protect(audio_packet(n, n * 160, 1000 * n)) for n in range(1, 11)]
    tampered = bytearray(protected[1])
    tampered[20] ^= 0x01  # one bit of the encrypted payload: the tag no longer matches
    forged_tag = protected[2][:-1] + bytes([protected[2][-1] ^ 0xFF])
    for data in (
        protected[0],
        bytes(tampered),
        forged_tag,
        protected[0],  # the first one replayed
        audio_packet(9, 9 * 160, 5000),  # plain RTP to an SRTP session
        b"\x80" + bytes(2000),  # longer than libsrtp's buffer
        *protected[3:],
    ):
        peer.send(data, session.local_port)
    frames = await take(session.audio_in, 5, timeout=2)  # packet 1, 2 and 3 concealed, 4, 5
    assert int(np.median(frames[0])) == mulaw(1000)
    assert int(np.median(frames[3])) == mulaw(4000)
    await asyncio.sleep(0.1)
    stats = session.stats
    assert (stats.srtp_rejected, stats.packets_received, stats.malformed) == (5, 8, 0)
    # a re-INVITE with the same keys keeps the streams: the replay window remembers packet 5
    session.start(peer.addr, PCMU, 101, srtp=ours)
    peer.send(protected[4], session.local_port)
    await asyncio.sleep(0.1)
    assert session.stats.srtp_rejected == 6


async def test_srtcp_reports_go_out_protected_and_come_in(
    open_session, open_peer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(rtp_module, "RTCP_INTERVAL", 0.1)
    ours, theirs = srtp_keys()
    far_end = SrtpStreams(theirs)
    rtp_sock, rtcp_sock = allocate(LOCAL, (31000, 32000))
    session, peer, rtcp_peer = await open_session(), await open_peer(sock=rtp_sock), await open_peer(sock=rtcp_sock)
    session.start(peer.addr, PCMU, None, srtp=ours)
    peer.send(far_end.protect(audio_packet(1, 160, 0, ssrc=0x55)), session.local_port)
    await asyncio.sleep(0.2)
    async with asyncio.timeout(2):
        report, _ = await rtcp_peer.inbox.get()
    with pytest.raises(MalformedPacket):
        parse_compound(report)  # encrypted: SRTCP's trailer does not parse as RTCP
    assert [p.packet_type for p in parse_compound(far_end.unprotect_rtcp(report))] == [SR, SDES]
    rtcp_peer.send(far_end.protect_rtcp(sender_report(0x55, 1e9, 0, 1, 160, [], "peer")), session.local_port + 1)
    rtcp_peer.send(sender_report(0x55, 1e9, 0, 1, 160, [], "forger"), session.local_port + 1)  # plain RTCP
    await asyncio.sleep(0.05)
    assert session.stats.rtcp_received == 1 and session.stats.srtp_rejected == 1
