"""Speech for phone calls: PCM16 8 kHz audio in, text out (Whisper); text in, PCM16 8 kHz audio out (Piper).

Offline only: the models come from a configured path or from the model packages installed from PyPI
(see `speech.models`). This package knows nothing about SIP or agents.

What a user imports from here: `Transcriber` (Whisper), `Synthesizer` (Piper), `VadModel` and `Endpointer`
(when a caller's turn starts and ends, with its events), `TurnModel` (Smart Turn), `EchoCanceller`,
`LanguageCheck` (the language a caller speaks, as a `Language`), `normalize_for_speech`, the WAV helpers and
the errors (each a `SpeechError`); `Transcript` and `EndpointerEvent` are what a transcriber and an endpointer give
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
    from speech.model_files import ModelError
    from speech.normalize import normalize_for_speech
    from speech.synthesizer import Synthesizer, SynthesizerConfig, SynthesizerError
    from speech.transcriber import Thresholds, Transcriber, Transcript
    from speech.turn import TurnModel, TurnModelError
    from speech.vad import VadModel, VadModelError

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
    "normalize_for_speech": "normalize",
    "Synthesizer": "synthesizer",
    "SynthesizerConfig": "synthesizer",
    "SynthesizerError": "synthesizer",
    "Thresholds": "transcriber",
    "Transcriber": "transcriber",
    "Transcript": "transcriber",
    "TurnModel": "turn",
    "TurnModelError": "turn",
    "VadModel": "vad",
    "VadModelError": "vad",
}
_NAMES_AT_HOME = {"EndpointerEvent": "Event"}  # a name too plain for the package's face
__all__ = [
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
    "Thresholds",
    "Transcriber",
    "Transcript",
    "TurnModel",
    "TurnModelError",
    "VadModel",
    "VadModelError",
    "WavError",
    "normalize_for_speech",
    "read_wav",
    "resample",
    "write_wav",
]


def __getattr__(name: str) -> Any:
    """Import a public name's module on first use (PEP 562), so that light users do not load the models' runtimes."""
    if name not in _HOMES:
        raise AttributeError(f"module 'speech' has no attribute {name!r}")
    return getattr(importlib.import_module(f"speech.{_HOMES[name]}"), _NAMES_AT_HOME.get(name, name))
