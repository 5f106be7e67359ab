"""Each package's __init__ names what its users import, and every name it lists is there."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest


@pytest.mark.parametrize(
    "package",
    [
        "telephony",
        "speech",
        "swarm",
        "swarm.providers",
        "callcenter",
        "callcenter.call",
        "callcenter.store",
        "callcenter.testbed",
    ],
)
def test_every_listed_name_is_importable(package: str) -> None:
    module = importlib.import_module(package)
    assert module.__all__, f"{package} lists no public names"
    missing = [name for name in module.__all__ if not hasattr(module, name)]
    assert missing == []


def test_importing_speech_loads_no_model_runtime_until_a_name_is_used() -> None:
    code = (
        "import sys, speech; heavy = ('faster_whisper', 'onnxruntime', 'piper'); "
        "print([m for m in heavy if m in sys.modules]); speech.VadModel; print('onnxruntime' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True).stdout
    assert out.split("\n")[:2] == ["[]", "True"]


def test_an_unknown_name_is_an_attribute_error() -> None:
    import speech

    with pytest.raises(AttributeError, match="no attribute 'Whisper'"):
        speech.Whisper  # noqa: B018
