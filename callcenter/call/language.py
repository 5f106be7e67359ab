"""The language check at a call's start: a caller the agents cannot serve goes to a person, unanswered."""

from __future__ import annotations

import asyncio
import logging
from typing import Protocol

import numpy as np

import speech
from speech import SpeechEnded

log = logging.getLogger(__name__)

# The call's first utterances long enough to judge are checked for another language (speech.language);
# a clear English one ends the checks.
LANGUAGE_CHECKS = 2
LANGUAGE_CHECK_S = 3.0  # ~0.6 s each on 2 cores; longer means calls queue for it: answer instead


class LanguageChecking(Protocol):
    """What a call needs of speech.LanguageCheck (tests/voice_fakes.py stands in for it)."""

    min_speech_s: float  # shorter utterances are not judged ("Hallo." is also "Hello.")

    async def foreign(self, pcm16_8k: np.ndarray, *, call_id: str = "-") -> speech.Language | None: ...


class LanguageChecks:
    """One call's checks: at most LANGUAGE_CHECKS utterances judged, none without a detector."""

    def __init__(self, check: LanguageChecking | None, call_id: str) -> None:
        self.check, self.call_id = check, call_id
        self.left = LANGUAGE_CHECKS if check is not None else 0

    async def another_language(self, turn: SpeechEnded, transcript: speech.Transcript) -> speech.Language | None:
        """At the call's start, words unclear to English ears that the detector hears in a language the agents
        do not serve: that language (the caller goes to a person), else None. A clear English utterance, or
        the second one judged, ends the checks; a detector that fails or lags only loses the check."""
        check = self.check
        if self.left <= 0 or check is None or turn.duration_s < check.min_speech_s:
            return None
        if not transcript.text.strip():
            return None  # noise: the detector names a language for a cough too
        self.left -= 1
        if transcript.confident and not transcript.retried:
            self.left = 0  # clear English
            return None
        try:
            return await asyncio.wait_for(check.foreign(turn.audio, call_id=self.call_id), LANGUAGE_CHECK_S)
        except Exception as error:  # noqa: BLE001 - the caller is answered as without the check
            log.warning("event=language_check_failed call=%s error=%r", self.call_id, error)
            return None
