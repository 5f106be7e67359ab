"""G.711 mu-law (PCMU) and A-law (PCMA) with numpy lookup tables.

`audioop` is deprecated and gone in Python 3.13; these tables give the same bytes as its
lin2ulaw/ulaw2lin/lin2alaw/alaw2lin (the ITU reference algorithm, Sun's g711.c).
"""

from __future__ import annotations

import numpy as np

_SEG_U = np.array([0x3F, 0x7F, 0xFF, 0x1FF, 0x3FF, 0x7FF, 0xFFF, 0x1FFF])
_SEG_A = np.array([0x1F, 0x3F, 0x7F, 0xFF, 0x1FF, 0x3FF, 0x7FF, 0xFFF])


def _ulaw_encode_table() -> np.ndarray:
    pcm = np.arange(-32768, 32768, dtype=np.int64) >> 2  # 14-bit magnitude, as the reference coder
    mask = np.where(pcm < 0, 0x7F, 0xFF)
    magnitude = np.minimum(np.abs(pcm), 8159) + (0x84 >> 2)
    seg = np.searchsorted(_SEG_U, magnitude, side="left")
    value = (np.minimum(seg, 7) << 4) | ((magnitude >> (np.minimum(seg, 7) + 1)) & 0xF)
    value = np.where(seg >= 8, 0x7F, value)
    return ((value ^ mask) & 0xFF).astype(np.uint8)


def _ulaw_decode_table() -> np.ndarray:
    u = ~np.arange(256, dtype=np.int64) & 0xFF
    t = (((u & 0x0F) << 3) + 0x84) << ((u & 0x70) >> 4)
    return np.where(u & 0x80, 0x84 - t, t - 0x84).astype(np.int16)


def _alaw_encode_table() -> np.ndarray:
    pcm = np.arange(-32768, 32768, dtype=np.int64) >> 3  # 13-bit
    mask = np.where(pcm >= 0, 0xD5, 0x55)
    magnitude = np.where(pcm >= 0, pcm, -pcm - 1)
    seg = np.searchsorted(_SEG_A, magnitude, side="left")
    shift = np.where(seg < 2, 1, np.minimum(seg, 7))
    value = (np.minimum(seg, 7) << 4) | ((magnitude >> shift) & 0x0F)
    value = np.where(seg >= 8, 0x7F, value)
    return ((value ^ mask) & 0xFF).astype(np.uint8)


def _alaw_decode_table() -> np.ndarray:
    a = np.arange(256, dtype=np.int64) ^ 0x55
    seg = (a & 0x70) >> 4
    t = (a & 0x0F) << 4
    t = np.where(seg == 0, t + 8, np.where(seg == 1, t + 0x108, (t + 0x108) << np.maximum(seg - 1, 0)))
    return np.where(a & 0x80, t, -t).astype(np.int16)


_ULAW_ENC, _ULAW_DEC = _ulaw_encode_table(), _ulaw_decode_table()
_ALAW_ENC, _ALAW_DEC = _alaw_encode_table(), _alaw_decode_table()
# The encode tables indexed by the sample's 16 bits read as unsigned (-1 is 0xFFFF): one lookup per packet,
# no widening and offsetting of every sample first. The encoders run once per packet per call.
_ULAW_ENC_U16, _ALAW_ENC_U16 = np.roll(_ULAW_ENC, 32768), np.roll(_ALAW_ENC, 32768)


def _as_u16(pcm16: bytes | np.ndarray) -> np.ndarray:
    if isinstance(pcm16, (bytes, bytearray, memoryview)):
        return np.frombuffer(pcm16, dtype="<u2")
    return pcm16.astype("<i2", copy=False).view("<u2")


def ulaw_encode(pcm16: bytes | np.ndarray) -> bytes:
    encoded: np.ndarray = _ULAW_ENC_U16[_as_u16(pcm16)]
    return encoded.tobytes()


def ulaw_decode(data: bytes) -> np.ndarray:
    return _ULAW_DEC[np.frombuffer(data, dtype=np.uint8)]


def alaw_encode(pcm16: bytes | np.ndarray) -> bytes:
    encoded: np.ndarray = _ALAW_ENC_U16[_as_u16(pcm16)]
    return encoded.tobytes()


def alaw_decode(data: bytes) -> np.ndarray:
    return _ALAW_DEC[np.frombuffer(data, dtype=np.uint8)]


# Silence as each codec sends it (the code for sample 0).
ULAW_SILENCE = int(_ULAW_ENC[32768])
ALAW_SILENCE = int(_ALAW_ENC[32768])
