"""speech.language with the real Whisper base detector, on espeak-ng's German and Piper's English through the
phone path; the whole path (a German caller over SIP handed to a person) is in tests/test_testbed_audio.py.
How often it catches each language is measured by benchmarks/language_check.py, not asserted here."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from harness import speech_corpus as corpus
from speech.language import LanguageCheck

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def check() -> Iterator[LanguageCheck]:
    language = LanguageCheck(("en",))
    yield language
    language.close()


def german(text: str) -> np.ndarray:
    return corpus.phone_path(*corpus.espeak(text, "de"))


async def test_a_german_caller_is_foreign_and_an_english_one_is_not(check: LanguageCheck) -> None:
    heard = await check.foreign(german("Meine Bestellung ist noch nicht angekommen, können Sie nachsehen?"))
    assert heard is not None and heard.code == "de" and heard.served_probability < 0.1, heard
    english = corpus.phone_path(*corpus.piper("I want to return the headphones I bought last week."))
    assert await check.foreign(english) is None
    assert check.detect(english).code == "en"


async def test_words_too_short_to_tell_apart_are_not_judged(check: LanguageCheck) -> None:
    short = german("Hallo.")
    assert short.size / 8000 < check.min_speech_s
    assert await check.foreign(short) is None


def test_a_language_the_agents_serve_is_not_foreign() -> None:
    both = LanguageCheck(("en", "de"))
    try:
        heard = both.detect(german("Ja, hallo, ich habe letzte Woche Kopfhörer gekauft und die funktionieren nicht."))
        assert heard.code == "de" and heard.served_probability > 0.5 and not both.is_foreign(heard)
    finally:
        both.close()


def test_english_only_ears_cannot_tell_languages_apart() -> None:
    with pytest.raises(ValueError, match="English-only"):
        LanguageCheck(model="tiny.en")
