"""RFC 4733 telephone-events for DTMF: the 4-byte event payload, and one key press out of a packet train."""

from __future__ import annotations

import struct
from collections import deque
from dataclasses import dataclass

from telephony.rtp_packet import MalformedPacket

DIGITS = "0123456789*#ABCD"  # event codes 0..15 (RFC 4733 section 3.2)
VOLUME = 10  # -10 dBm0, what phones commonly send
_EVENT = struct.Struct("!BBH")


@dataclass(frozen=True, slots=True)
class TelephoneEvent:
    event: int
    end: bool
    volume: int
    duration: int  # in timestamp units since the event's start

    @classmethod
    def parse(cls, payload: bytes) -> TelephoneEvent:
        if len(payload) < _EVENT.size:
            raise MalformedPacket(f"a telephone-event payload is 4 bytes, got {len(payload)}")
        event, flags, duration = _EVENT.unpack_from(payload)
        return cls(event, bool(flags & 0x80), flags & 0x3F, duration)

    def to_bytes(self) -> bytes:
        return _EVENT.pack(self.event, (0x80 if self.end else 0) | (self.volume & 0x3F), self.duration & 0xFFFF)


def event_code(digit: str) -> int:
    code = DIGITS.find(digit.upper()) if len(digit) == 1 else -1
    if code < 0:
        raise ValueError(f"DTMF digit must be one of {DIGITS}, got {digit!r}")
    return code


class DtmfDetector:
    """Turns the packets of RFC 4733 events into one digit per key press.

    Every packet of one key press carries the RTP timestamp of its start (updates and the three end
    packets alike), so a timestamp seen before is the same press. A new press always has a new timestamp,
    even for the same key pressed twice.
    """

    def __init__(self) -> None:
        self._seen: deque[int] = deque(maxlen=8)

    def feed(self, timestamp: int, payload: bytes) -> str | None:
        event = TelephoneEvent.parse(payload)
        if event.event >= len(DIGITS) or timestamp in self._seen:
            return None
        self._seen.append(timestamp)
        return DIGITS[event.event]

    def reset(self) -> None:
        self._seen.clear()
