"""The audio codecs a call can use: G.711 mu-law (PCMU) and A-law (PCMA), 8 kHz, static payload types."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from telephony.g711 import ALAW_SILENCE, ULAW_SILENCE, alaw_decode, alaw_encode, ulaw_decode, ulaw_encode

CLOCK_RATE = 8000

_G711: dict[str, tuple[Callable[[bytes | np.ndarray], bytes], Callable[[bytes], np.ndarray], int]] = {
    "PCMU": (ulaw_encode, ulaw_decode, ULAW_SILENCE),
    "PCMA": (alaw_encode, alaw_decode, ALAW_SILENCE),
}
STATIC_PAYLOAD_TYPES = {0: "PCMU", 8: "PCMA"}  # RFC 3551: usable without an rtpmap line


@dataclass(frozen=True)
class Codec:
    """A negotiated audio codec: its name, the payload type agreed in SDP and its clock rate."""

    name: str
    payload_type: int
    clock_rate: int = CLOCK_RATE

    def __post_init__(self) -> None:
        if self.name not in _G711:
            raise ValueError(f"unsupported codec {self.name!r}: only {', '.join(_G711)} are implemented")
        if not 0 <= self.payload_type <= 127:
            raise ValueError(f"payload type {self.payload_type} is outside 0..127")

    def encode(self, pcm16: bytes | np.ndarray) -> bytes:
        return _G711[self.name][0](pcm16)

    def decode(self, payload: bytes) -> np.ndarray:
        return _G711[self.name][1](payload)

    @property
    def silence(self) -> int:
        """The byte this codec sends for a zero sample."""
        return _G711[self.name][2]


PCMU = Codec("PCMU", 0)
PCMA = Codec("PCMA", 8)
SUPPORTED = tuple(_G711)
