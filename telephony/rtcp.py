"""Basic RTCP (RFC 3550 section 6): reception statistics, sender/receiver reports with a CNAME, parsing.

Parsing reads only what the session uses (packet type, sender SSRC, the NTP time of a sender report);
every compound packet is checked end to end so that a broken one is counted, never trusted.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from telephony.jitter import MAX_DROPOUT, MAX_MISORDER
from telephony.rtp_packet import VERSION, MalformedPacket

SR, RR, SDES, BYE = 200, 201, 202, 203
NTP_UNIX_OFFSET = 2208988800  # seconds from 1900 (NTP) to 1970 (Unix)
_CNAME = 1


@dataclass
class ReceptionStats:
    """Sequence, loss and interarrival jitter of one source, after RFC 3550 appendix A.1, A.3 and A.8."""

    clock_rate: int = 8000
    received: int = 0
    jitter: float = 0.0  # in timestamp units
    base_seq: int = 0
    max_seq: int = 0
    cycles: int = 0
    _expected_prior: int = 0
    _received_prior: int = 0
    _last_arrival: float | None = None
    _last_timestamp: int = 0
    last_sr: int = 0  # middle 32 bits of the NTP time in the peer's last sender report
    last_sr_at: float = 0.0

    def update(self, seq: int, timestamp: int, arrival: float, audio: bool) -> None:
        if self.received == 0:
            self.base_seq = self.max_seq = seq
        else:
            delta = (seq - self.max_seq) & 0xFFFF
            if 0 < delta < MAX_DROPOUT:
                if seq < self.max_seq:
                    self.cycles += 0x10000
                self.max_seq = seq
            elif 0 < delta < 0x10000 - MAX_MISORDER:  # a jump too far either way: the source restarted
                self.received = self._expected_prior = self._received_prior = self.cycles = 0
                self.base_seq = self.max_seq = seq
        self.received += 1
        if audio:  # telephone-events repeat one timestamp and would read as jitter
            if self._last_arrival is not None:
                elapsed = ((timestamp - self._last_timestamp + 0x80000000) & 0xFFFFFFFF) - 0x80000000
                transit_change = (arrival - self._last_arrival) * self.clock_rate - elapsed
                self.jitter += (abs(transit_change) - self.jitter) / 16
            self._last_arrival, self._last_timestamp = arrival, timestamp

    @property
    def expected(self) -> int:
        return self.cycles + self.max_seq - self.base_seq + 1 if self.received else 0

    @property
    def lost(self) -> int:
        return max(self.expected - self.received, 0)

    @property
    def jitter_ms(self) -> float:
        return self.jitter * 1000 / self.clock_rate

    def report_block(self, ssrc: int, now: float) -> bytes:
        """A report block for the source `ssrc`; resets the interval used for the fraction lost."""
        expected_interval = self.expected - self._expected_prior
        lost_interval = expected_interval - (self.received - self._received_prior)
        self._expected_prior, self._received_prior = self.expected, self.received
        fraction = (lost_interval << 8) // expected_interval if expected_interval > 0 and lost_interval > 0 else 0
        lost = min(self.expected - self.received, 0x7FFFFF) & 0xFFFFFF
        delay = int((now - self.last_sr_at) * 65536) if self.last_sr else 0
        return struct.pack(
            "!IIIIII",
            ssrc,
            min(fraction, 255) << 24 | lost,
            (self.cycles + self.max_seq) & 0xFFFFFFFF,
            int(self.jitter),
            self.last_sr,
            delay & 0xFFFFFFFF,
        )


def ntp_time(unix_time: float) -> tuple[int, int]:
    seconds = int(unix_time)
    return (seconds + NTP_UNIX_OFFSET) & 0xFFFFFFFF, int((unix_time - seconds) * 2**32) & 0xFFFFFFFF


def _header(count: int, packet_type: int, body: bytes) -> bytes:
    return struct.pack("!BBH", VERSION << 6 | count, packet_type, len(body) // 4) + body  # length: words - 1 + header


def _sdes(ssrc: int, cname: str) -> bytes:
    text = cname.encode()[:255]
    chunk = struct.pack("!IBB", ssrc, _CNAME, len(text)) + text + b"\0"
    chunk += bytes(-len(chunk) % 4)
    return _header(1, SDES, chunk)


def sender_report(
    ssrc: int, unix_time: float, rtp_timestamp: int, packets: int, octets: int, blocks: list[bytes], cname: str
) -> bytes:
    body = struct.pack(
        "!IIIIII", ssrc, *ntp_time(unix_time), rtp_timestamp & 0xFFFFFFFF, packets & 0xFFFFFFFF, octets & 0xFFFFFFFF
    ) + b"".join(blocks)
    return _header(len(blocks), SR, body) + _sdes(ssrc, cname)


def receiver_report(ssrc: int, blocks: list[bytes], cname: str) -> bytes:
    return _header(len(blocks), RR, struct.pack("!I", ssrc) + b"".join(blocks)) + _sdes(ssrc, cname)


@dataclass(frozen=True)
class RtcpPacket:
    packet_type: int
    ssrc: int
    ntp_middle: int | None = None  # sender reports only: what the peer expects back as LSR


def parse_compound(data: bytes) -> list[RtcpPacket]:
    packets: list[RtcpPacket] = []
    offset = 0
    while offset < len(data):
        if len(data) - offset < 8:
            raise MalformedPacket(f"an RTCP packet needs 8 bytes, {len(data) - offset} left")
        first, packet_type, words, ssrc = struct.unpack_from("!BBHI", data, offset)
        size = (words + 1) * 4
        if first >> 6 != VERSION or offset + size > len(data):
            raise MalformedPacket(f"RTCP version {first >> 6} or length {size} does not fit the datagram")
        if not 192 <= packet_type <= 223:
            raise MalformedPacket(f"RTCP packet type {packet_type} is outside 192..223")
        ntp_middle = None
        if packet_type == SR:
            if size < 28:
                raise MalformedPacket(f"a sender report needs 28 bytes, got {size}")
            msw, lsw = struct.unpack_from("!II", data, offset + 8)
            ntp_middle = (msw & 0xFFFF) << 16 | lsw >> 16
        packets.append(RtcpPacket(packet_type, ssrc, ntp_middle))
        offset += size
    if not packets:
        raise MalformedPacket("an empty RTCP datagram")
    return packets
