"""What one call leaves for its record: both sides' lines as said and heard, and each caller turn's timings."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any


@dataclass
class TurnTiming:
    """One caller turn, in seconds since the end of the caller's speech."""

    transcript_s: float | None = None  # end of speech -> transcript
    first_sentence_s: float | None = None  # end of speech -> the model's first sentence
    first_audio_s: float | None = None  # end of speech -> first reply audio handed to the call (voice-to-voice)
    acknowledged_s: float | None = None  # end of speech -> an acknowledgement handed to the call, if the reply was slow
    behind_s: float = 0.0  # the reply's first audio waited this long behind an acknowledgement still playing
    early: bool = False  # the transcript was started at the caller's pause, before the end of the turn
    early_reply: bool = False  # so was the model's reply (the turn took the speculation started there)

    def breakdown(self) -> dict[str, float | bool | None]:
        llm = _minus(self.first_sentence_s, self.transcript_s)
        tts = _minus(self.first_audio_s, self.first_sentence_s)
        return {
            "stt_s": self.transcript_s,
            "llm_s": llm,
            "tts_s": tts,
            "voice_to_voice_s": self.first_audio_s,
            "acknowledged_s": self.acknowledged_s,
            # What the caller waited in silence after the end of the turn: the first sound they heard.
            "first_sound_s": min((s for s in (self.first_audio_s, self.acknowledged_s) if s is not None), default=None),
            # When the reply itself began to play (after any acknowledgement ahead of it).
            "answer_s": None if self.first_audio_s is None else self.first_audio_s + self.behind_s,
            "early_transcript": self.early,
            "early_reply": self.early_reply,
        }


@dataclass
class Transcript:
    """Both sides of the call, as said and heard, for the call record."""

    lines: list[dict[str, Any]] = field(default_factory=list)
    turns: list[TurnTiming] = field(default_factory=list)

    def add(self, who: str, text: str, *, via: str | None = None) -> None:
        line: dict[str, Any] = {"at": time.time(), "who": who, "text": text}
        if via is not None:
            line["via"] = via  # "keypad": typed, not said; "acknowledgement": heard, not in the model's history
        self.lines.append(line)


def _minus(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b
