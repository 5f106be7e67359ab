"""Cut streamed text into sentences, so the first one can be spoken before the reply is finished."""

from __future__ import annotations

import re

# A sentence ends at . ! ? (or a run of them) followed by whitespace; "24.90" and "e.g." mid-word do not cut.
_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+")


# Where a sentence ends in a caller's words (a transcript, a typed message): after . ! or ?, at the space.
_SAID_END = re.compile(r"(?<=[.!?])\s+")


def split_sentences(text: str) -> list[str]:
    """The words cut into sentences where . ! or ? meets a space; each keeps its own punctuation."""
    return _SAID_END.split(text)


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
