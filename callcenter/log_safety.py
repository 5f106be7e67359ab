"""Log lines that a caller cannot forge: every value is written on its line, escaped.

A SIP From user, a Call-ID, a WebSocket client's id, a BYE's reason: they come from the network, and a CR or LF
in one (`%0A` in a From user, percent-decoded) would start a line of the sender's choosing. The formatter escapes
control characters in each message (the traceback of an exception keeps its own lines: it is ours).
"""

from __future__ import annotations

import logging

MAX_VALUE_CHARS = 200


def printable(value: object) -> str:
    """The value as one line of printable text: control characters as \\n, \\x1b..., at most 200 characters."""
    text = str(value)
    if text.isprintable():
        return text[:MAX_VALUE_CHARS]
    escaped = "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)
    return escaped[:MAX_VALUE_CHARS]


class SafeFormatter(logging.Formatter):
    """A Formatter whose messages are one line each, whatever their arguments held."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        message = record.message
        if not message.isprintable():
            record.message = "".join(
                c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in message
            )
        return super().formatMessage(record)


def configure(level: int = logging.INFO) -> None:
    """The root logger writes one escaped line per event (what `voiceswarm serve` uses)."""
    handler = logging.StreamHandler()
    handler.setFormatter(SafeFormatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    logging.basicConfig(level=level, handlers=[handler])
