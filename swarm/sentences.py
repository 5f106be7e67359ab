"""Cut streamed text into sentences, so the first one can be spoken before the reply is finished."""

from __future__ import annotations

import re

# A sentence ends at . ! ? (or a run of them) followed by whitespace; "24.90" and "e.g." mid-word do not cut.
_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+")


class SentenceSplitter:
    def __init__(self) -> None:
        self._buffer = ""

    def feed(self, text: str) -> list[str]:
        """Add streamed text; return the sentences it completed."""
        self._buffer += text
        sentences: list[str] = []
        start = 0
        for match in _END.finditer(self._buffer):
            sentence = self._buffer[start : match.end()].strip()
            if sentence:
                sentences.append(sentence)
            start = match.end()
        self._buffer = self._buffer[start:]
        return sentences

    def flush(self) -> str:
        """The text left after the stream ended."""
        rest, self._buffer = self._buffer.strip(), ""
        return rest
