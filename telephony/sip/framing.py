"""SIP message framing on a byte stream (RFC 3261 §18.3, RFC 5626 §4.4.1), without I/O.

On TCP and TLS a message ends where its Content-Length says, so Content-Length is mandatory there; between
messages a peer may send keep-alives: CRLFCRLF is a ping (answered with a pong), a lone CRLF a pong.
Any framing error leaves the stream out of step, so the caller closes the connection after it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

from .errors import SipError
from .message import MAX_MESSAGE_SIZE

_HEADER_END_RE = re.compile(rb"\r?\n\r?\n")
_CONTENT_LENGTH_RE = re.compile(rb"(?im)^(?:content-length|l)[ \t]*:[ \t]*([^\r\n]*?)[ \t]*\r?$")
_PING = b"\r\n\r\n"
_CRLF = b"\r\n"


class KeepAlive(Enum):
    PING = "ping"  # CRLFCRLF: the peer asks whether we are still there
    PONG = "pong"  # CRLF: the answer to our ping


Frame = bytes | KeepAlive


@dataclass
class FramingError(SipError):
    """The stream cannot be framed any further; `head` is the header block, when one was read, for a response."""

    status: int
    detail: str
    head: bytes = b""

    def __str__(self) -> str:
        return self.detail


class StreamFramer:
    """Feed it bytes as they arrive; it returns the complete messages (and keep-alives) among them."""

    def __init__(self, max_size: int = MAX_MESSAGE_SIZE) -> None:
        self.max_size = max_size
        self._buffer = bytearray()

    @property
    def pending(self) -> int:
        """Bytes of a message not yet complete."""
        return len(self._buffer)

    def feed(self, data: bytes) -> list[Frame]:
        """The frames completed by `data`; raises FramingError, after which nothing more can be framed."""
        self._buffer += data
        frames: list[Frame] = []
        while (frame := self._next()) is not None:
            frames.append(frame)
        return frames

    def _next(self) -> Frame | None:
        buffer = self._buffer
        if buffer.startswith(_CRLF):
            if buffer.startswith(_PING):
                del buffer[:4]
                return KeepAlive.PING
            if len(buffer) < 4 and _PING.startswith(buffer):
                return None  # the first half of a ping, or a pong: the next bytes tell
            del buffer[:2]
            return KeepAlive.PONG
        end = _HEADER_END_RE.search(buffer)
        if end is None:
            if len(buffer) > self.max_size:
                raise FramingError(513, f"no end of headers within {self.max_size} bytes")
            return None
        head = bytes(buffer[: end.end()])
        length = _content_length(head)
        total = end.end() + length
        if total > self.max_size:
            raise FramingError(513, f"message of {total} bytes is over the {self.max_size}-byte limit", head)
        if len(buffer) < total:
            return None
        message = bytes(buffer[:total])
        del buffer[:total]
        return message


def _content_length(head: bytes) -> int:
    values = {match[1] for match in _CONTENT_LENGTH_RE.finditer(head)}
    if not values:
        raise FramingError(400, "no Content-Length: it is required on TCP and TLS (RFC 3261 §18.3)", head)
    if len(values) > 1:
        raise FramingError(400, f"{len(values)} different Content-Length values", head)
    value = values.pop()
    if not value.isdigit() or len(value) > 10:
        raise FramingError(400, f"Content-Length {value[:20].decode('latin-1')!r} is not a number", head)
    return int(value)
