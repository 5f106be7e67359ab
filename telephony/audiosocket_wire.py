"""Asterisk AudioSocket framing: one byte kind, a 16-bit big-endian payload length, the payload.

Protocol: https://docs.asterisk.org/Configuration/Channel-Drivers/AudioSocket/ and Asterisk's
res/res_audiosocket.c. Asterisk sends the UUID first, then audio (signed linear 16-bit little-endian,
8 kHz mono, one channel frame per message) and, since the 2025 releases, DTMF digits. It accepts only
audio and hangup from us; anything else makes it drop the call.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass

from telephony.errors import TelephonyError

KIND_HANGUP = 0x00  # no payload; closing the socket means the same
KIND_UUID = 0x01  # 16 bytes: the binary UUID given to AudioSocket() in the dialplan
KIND_DTMF = 0x03  # 1 byte: the ASCII digit
KIND_AUDIO = 0x10  # slin: 16-bit signed linear, 8 kHz, mono, little-endian
KIND_ERROR = 0xFF  # optional payload: Asterisk's bit-packed error code
HIGHER_RATE_KINDS = {
    0x11: 12000,
    0x12: 16000,
    0x13: 24000,
    0x14: 32000,
    0x15: 44100,
    0x16: 48000,
    0x17: 96000,
    0x18: 192000,
}  # slin at higher rates (Asterisk 2025+): we take 8 kHz only
KNOWN_KINDS = frozenset({KIND_HANGUP, KIND_UUID, KIND_DTMF, KIND_AUDIO, KIND_ERROR})
# Asterisk error codes (bit-packed), from the protocol's reference implementation
ERROR_CODES = {0x01: "caller hung up", 0x02: "frame forwarding error", 0x04: "memory allocation error"}
ERROR_CALLER_HUNG_UP = 0x01

HEADER_BYTES = 3
MAX_AUDIO_BYTES = 16000  # 1 s: Asterisk sends one channel frame (typically 20 ms) per message
HANGUP_MESSAGE = bytes((KIND_HANGUP, 0, 0))
_HEADER = struct.Struct(">BH")


class AudioSocketFramingError(TelephonyError, ValueError):
    """The peer broke the AudioSocket framing; the connection cannot be resynchronised and must close."""


@dataclass(frozen=True, slots=True)
class Message:
    kind: int
    payload: bytes


def encode(kind: int, payload: bytes = b"") -> bytes:
    """One whole message, to be written with a single write (old Asterisk reads the header in one read)."""
    if len(payload) > 0xFFFF:
        raise ValueError(f"an AudioSocket payload holds at most 65535 bytes, got {len(payload)}")
    return _HEADER.pack(kind, len(payload)) + payload


class MessageReader:
    """Incremental parser: feed the bytes as TCP delivers them, get whole messages back.

    Holds at most one partial message (under 64 KB), so a peer cannot make it grow without bound.
    """

    def __init__(self) -> None:
        self._buffer = bytearray()

    @property
    def pending(self) -> int:
        """Bytes of an incomplete message (non-zero when the peer closes mid-message: truncated)."""
        return len(self._buffer)

    def feed(self, data: bytes) -> Iterator[Message]:
        """Yield the messages completed by `data`; raises AudioSocketFramingError at the first bad header."""
        self._buffer += data
        return self._drain()

    def _drain(self) -> Iterator[Message]:
        buffer = self._buffer
        while len(buffer) >= HEADER_BYTES:
            kind, length = _HEADER.unpack_from(buffer)
            check_header(kind, length)
            end = HEADER_BYTES + length
            if len(buffer) < end:
                return
            payload = bytes(buffer[HEADER_BYTES:end])
            del buffer[:end]
            yield Message(kind, payload)


def check_header(kind: int, length: int) -> None:
    """Reject a header before its payload is read: a bad one means the stream is not AudioSocket."""
    if kind in HIGHER_RATE_KINDS:
        raise AudioSocketFramingError(
            f"audio at {HIGHER_RATE_KINDS[kind]} Hz (kind 0x{kind:02x}): VoiceSwarm takes 8 kHz slin only; "
            "use the AudioSocket() application or Dial(AudioSocket/host:port/uuid/c(slin))"
        )
    if kind not in KNOWN_KINDS:
        raise AudioSocketFramingError(f"unknown message kind 0x{kind:02x} (is this peer speaking AudioSocket?)")
    if kind == KIND_UUID and length != 16:
        raise AudioSocketFramingError(f"a UUID message carries 16 bytes, got a length of {length}")
    if kind == KIND_DTMF and length != 1:
        raise AudioSocketFramingError(f"a DTMF message carries 1 byte, got a length of {length}")
    if kind == KIND_AUDIO and (length > MAX_AUDIO_BYTES or length % 2):
        raise AudioSocketFramingError(
            f"an audio message of {length} bytes: expected whole 16-bit samples and at most {MAX_AUDIO_BYTES} "
            "bytes (with Dial(AudioSocket/...), add /c(slin) so that Asterisk sends slin)"
        )
