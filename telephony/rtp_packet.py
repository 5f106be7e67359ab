"""The RTP fixed header (RFC 3550 section 5.1): parse and build, with CSRCs, one header extension and padding."""

from __future__ import annotations

import struct
from dataclasses import dataclass

from telephony.errors import TelephonyError

_HEADER = struct.Struct("!BBHII")
VERSION = 2


class MalformedPacket(TelephonyError, ValueError):
    """A datagram that is not a valid RTP or RTCP packet."""


@dataclass(slots=True)
class RtpPacket:
    payload_type: int
    seq: int
    timestamp: int
    ssrc: int
    payload: bytes
    marker: bool = False
    csrc: tuple[int, ...] = ()
    extension: tuple[int, bytes] | None = None  # (profile-defined id, data: a multiple of 4 bytes)
    padding: int = 0  # padding bytes after the payload, the last of which holds the count

    def to_bytes(self) -> bytes:
        first = VERSION << 6 | (0x20 if self.padding else 0) | (0x10 if self.extension else 0) | len(self.csrc)
        parts = [
            _HEADER.pack(
                first,
                (0x80 if self.marker else 0) | self.payload_type,
                self.seq & 0xFFFF,
                self.timestamp & 0xFFFFFFFF,
                self.ssrc,
            ),
            struct.pack(f"!{len(self.csrc)}I", *self.csrc),
        ]
        if self.extension:
            profile, data = self.extension
            if len(data) % 4:
                raise ValueError("an RTP header extension must be a multiple of 4 bytes")
            parts.append(struct.pack("!HH", profile, len(data) // 4) + data)
        parts.append(self.payload)
        if self.padding:
            parts.append(bytes(self.padding - 1) + bytes([self.padding]))
        return b"".join(parts)


def parse(data: bytes) -> RtpPacket:
    """Parse one RTP datagram; anything inconsistent raises MalformedPacket."""
    if len(data) < _HEADER.size:
        raise MalformedPacket(f"{len(data)} bytes is shorter than an RTP header")
    first, second, seq, timestamp, ssrc = _HEADER.unpack_from(data)
    if first == 0x80:  # what phones send: no padding, extension or CSRC (the fast path, once per packet)
        return RtpPacket(second & 0x7F, seq, timestamp, ssrc, data[_HEADER.size :], second > 0x7F)
    if first >> 6 != VERSION:
        raise MalformedPacket(f"RTP version {first >> 6}, expected 2")
    end = len(data)
    if first & 0x20:
        pad = data[-1]
        if pad == 0 or pad > end - _HEADER.size:
            raise MalformedPacket(f"padding count {pad} does not fit a {end}-byte packet")
        end -= pad
    offset = _HEADER.size + 4 * (first & 0x0F)
    if offset > end:
        raise MalformedPacket("the CSRC list runs past the end of the packet")
    csrc = struct.unpack_from(f"!{first & 0x0F}I", data, _HEADER.size)
    extension = None
    if first & 0x10:
        if offset + 4 > end:
            raise MalformedPacket("the header extension runs past the end of the packet")
        profile, words = struct.unpack_from("!HH", data, offset)
        if offset + 4 + 4 * words > end:
            raise MalformedPacket("the header extension runs past the end of the packet")
        extension = (profile, data[offset + 4 : offset + 4 + 4 * words])
        offset += 4 + 4 * words
    return RtpPacket(
        second & 0x7F, seq, timestamp, ssrc, data[offset:end], bool(second & 0x80), csrc, extension, len(data) - end
    )


def is_rtcp(data: bytes) -> bool:
    """RTCP sent to the RTP port (rtcp-mux, RFC 5761): packet types 192..223 sit where marker+PT would."""
    return len(data) >= 2 and 192 <= data[1] <= 223
