from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from voxflow.engines.base import VoiceNotFoundError
from voxflow.engines.registry import VoiceRegistry


def _copy_bundled(target: Path, name: str) -> None:
    bundled = VoiceRegistry().get("joe")
    (target / f"{name}.onnx").symlink_to(bundled.model_path)
    shutil.copy(bundled.config_path, target / f"{name}.onnx.json")


def test_bundled_voice_is_the_default() -> None:
    registry = VoiceRegistry()
    assert registry.default_voice == "joe"
    info = registry.get("joe")
    assert (info.language, info.sample_rate, info.source) == ("en_US", 22050, "bundled")
    assert registry.get("en_US-joe-medium") == info


def test_voices_directory_is_scanned(tmp_path: Path) -> None:
    _copy_bundled(tmp_path, "en_GB-test-low")
    (tmp_path / "orphan.onnx").write_bytes(b"no config next to it")
    registry = VoiceRegistry(tmp_path)
    names = [v.name for v in registry.list()]
    assert names == ["en_GB-test-low", "joe"]
    assert registry.get("en_GB-test-low").source == str(tmp_path)


def test_a_voice_added_later_is_found_on_lookup(tmp_path: Path) -> None:
    now = [0.0]
    registry = VoiceRegistry(
        tmp_path, include_bundled=False, rescan_interval_s=1.0, clock=lambda: now[0]
    )
    with pytest.raises(VoiceNotFoundError):
        registry.default_voice  # noqa: B018 - the property raises
    _copy_bundled(tmp_path, "late")
    now[0] = 1.0
    assert registry.get("late").name == "late"
    assert registry.default_voice == "late"


def test_names_it_does_not_have_rescan_the_directory_at_most_once_a_second(
    tmp_path: Path,
) -> None:
    now = [0.0]
    registry = VoiceRegistry(tmp_path, rescan_interval_s=1.0, clock=lambda: now[0])
    _copy_bundled(tmp_path, "late")
    now[0] = 0.5
    for _ in range(100):  # a client naming unknown voices: no disk read before the interval
        with pytest.raises(VoiceNotFoundError):
            registry.get("a0a6e3c2-unknown-id")
    with pytest.raises(VoiceNotFoundError):
        registry.get("late")  # dropped in, not seen yet: the last scan was at 0
    now[0] = 1.0
    assert registry.get("late").name == "late"


def test_unknown_voice_and_missing_directory_fail_clearly(tmp_path: Path) -> None:
    with pytest.raises(VoiceNotFoundError, match="available: joe"):
        VoiceRegistry().get("nobody")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        VoiceRegistry(tmp_path / "missing")
