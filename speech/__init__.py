"""Speech for phone calls: PCM16 8 kHz audio in, text out (Whisper); text in, PCM16 8 kHz audio out (Piper).

Offline only: the models come from a configured path or from the model packages installed from PyPI
(see `speech.models`). This package knows nothing about SIP or agents.

What a user imports from here: `Transcriber` (Whisper), `Synthesizer` (Piper), `VadModel` and `Endpointer`
(when a caller's turn starts and ends, with its events), `TurnModel` (Smart Turn), `EchoCanceller`,
`LanguageCheck` (the language a caller speaks, as a `Language`), `normalize_for_speech`, the WAV helpers and
the errors (each a `SpeechError`), the phone's rates (`PHONE_RATE`, `TELEPHONE_RATE`), the words that tell a
turn's end (`stops_agent`, `heard_again`, ... from `speech.turn_words`) and the checked model files' helpers
(`import_package`, `package_dir`, `join_verified`, `sha256`, `default_cache_dir`); `Transcript` and `EndpointerEvent` are what a transcriber and an endpointer give
back. Each is loaded on first use: importing `speech` (or `speech.audio`) does not load faster-whisper, Piper or
onnxruntime.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from speech.audio import WavError, read_wav, resample, write_wav
    from speech.echo import EchoCanceller
    from speech.endpointer import Endpointer, FrameError, SpeechEnded, SpeechPaused, SpeechResumed, SpeechStarted
    from speech.endpointer import Event as EndpointerEvent
    from speech.errors import SpeechError
    from speech.language import Language, LanguageCheck
    from speech.model_files import ModelError, default_cache_dir, import_package, join_verified, package_dir, sha256
    from speech.normalize import normalize_for_speech
    from speech.synthesizer import TELEPHONE_RATE, Synthesizer, SynthesizerConfig, SynthesizerError
    from speech.transcriber import Thresholds, Transcriber, Transcript
    from speech.turn import ThreadJudge, TurnModel, TurnModelError
    from speech.turn_words import (
        BACKCHANNEL_PROMPT,
        TRAILING_OFF_PROMPT,
        heard_again,
        heard_unfinished,
        stops_agent,
    )
    from speech.vad import PHONE_RATE, VadModel, VadModelError

_HOMES = {
    "WavError": "audio",
    "read_wav": "audio",
    "resample": "audio",
    "write_wav": "audio",
    "EchoCanceller": "echo",
    "Endpointer": "endpointer",
    "EndpointerEvent": "endpointer",
    "FrameError": "endpointer",
    "SpeechEnded": "endpointer",
    "SpeechPaused": "endpointer",
    "SpeechResumed": "endpointer",
    "SpeechStarted": "endpointer",
    "SpeechError": "errors",
    "Language": "language",
    "LanguageCheck": "language",
    "ModelError": "model_files",
    "default_cache_dir": "model_files",
    "import_package": "model_files",
    "join_verified": "model_files",
    "package_dir": "model_files",
    "sha256": "model_files",
    "normalize_for_speech": "normalize",
    "Synthesizer": "synthesizer",
    "SynthesizerConfig": "synthesizer",
    "SynthesizerError": "synthesizer",
    "TELEPHONE_RATE": "synthesizer",
    "Thresholds": "transcriber",
    "Transcriber": "transcriber",
    "Transcript": "transcriber",
    "ThreadJudge": "turn",
    "TurnModel": "turn",
    "TurnModelError": "turn",
    "BACKCHANNEL_PROMPT": "turn_words",
    "TRAILING_OFF_PROMPT": "turn_words",
    "heard_again": "turn_words",
    "heard_unfinished": "turn_words",
    "stops_agent": "turn_words",
    "PHONE_RATE": "vad",
    "VadModel": "vad",
    "VadModelError": "vad",
}
_NAMES_AT_HOME = {"EndpointerEvent": "Event"}  # a name too plain for the package's face
__all__ = [
    "BACKCHANNEL_PROMPT",
    "PHONE_RATE",
    "TELEPHONE_RATE",
    "TRAILING_OFF_PROMPT",
    "EchoCanceller",
    "Endpointer",
    "EndpointerEvent",
    "FrameError",
    "Language",
    "LanguageCheck",
    "ModelError",
    "SpeechEnded",
    "SpeechError",
    "SpeechPaused",
    "SpeechResumed",
    "SpeechStarted",
    "Synthesizer",
    "SynthesizerConfig",
    "SynthesizerError",
    "ThreadJudge",
    "Thresholds",
    "Transcriber",
    "Transcript",
    "TurnModel",
    "TurnModelError",
    "VadModel",
    "VadModelError",
    "WavError",
    "default_cache_dir",
    "heard_again",
    "heard_unfinished",
    "import_package",
    "join_verified",
    "normalize_for_speech",
    "package_dir",
    "read_wav",
    "resample",
    "sha256",
    "stops_agent",
    "write_wav",
]


def __getattr__(name: str) -> Any:
    """Import a public name's module on first use (PEP 562), so that light users do not load the models' runtimes."""
    if name not in _HOMES:
        raise AttributeError(f"module 'speech' has no attribute {name!r}")
    return getattr(importlib.import_module(f"speech.{_HOMES[name]}"), _NAMES_AT_HOME.get(name, name))
