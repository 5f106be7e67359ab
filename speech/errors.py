"""The root of speech's errors, so that a user can catch every one of them with one `except`.

Each error keeps the built-in base it had (a frame of the wrong shape is still a `ValueError`). This module imports
nothing, so catching `SpeechError` loads no model runtime.
"""

from __future__ import annotations


class SpeechError(Exception):
    """A model, voice, WAV file or audio frame that cannot be used; the subclass and message say what."""
