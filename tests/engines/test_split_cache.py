"""The split cache: a cut is read back as it was made, never read stale, and a cache that cannot
be read or written costs nothing but the cut."""

from __future__ import annotations

import argparse
import logging
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
import pytest

from voxflow.cli.serve import add_serve_parser, kokoro_overrides
from voxflow.config import ServerSettings
from voxflow.engines import graph_split, sessions, split_cache
from voxflow.engines.base import VoiceSettings
from voxflow.engines.graph_split import SplitModel, split_piper_model
from voxflow.engines.piper import EngineSettings, PiperEngine
from voxflow.engines.registry import VoiceRegistry
from voxflow.engines.split_cache import CachedCut, SplitCache


@dataclass(frozen=True)
class Cut:
    first: bytes
    second: bytes
    layers: int
    flag: bool


class Cutter:
    """A cut of a source file's bytes, counting how often it is made."""

    def __init__(self, source: Path) -> None:
        self.source = source
        self.calls = 0

    def __call__(self) -> Cut:
        self.calls += 1
        data = self.source.read_bytes()
        return Cut(data[:3], data[3:], len(data), data.startswith(b"x"))


@pytest.fixture
def source(tmp_path: Path) -> Path:
    path = tmp_path / "model.onnx"
    path.write_bytes(b"xyz" + bytes(range(256)) * 4)
    return path


def _cached(cache: SplitCache, source: Path, cutter: Cutter) -> CachedCut[Cut]:
    return cache.get(Cut, [source], [split_cache], cutter)


def _get(cache: SplitCache, source: Path, cutter: Cutter) -> Cut:
    return _cached(cache, source, cutter).value


def _files(cache: SplitCache) -> list[Path]:
    """The cache's files, without the locks of their making (``_locks``)."""
    return sorted(f for f in cache.directory.iterdir() if f.suffix != ".lock")


def _locks(cache: SplitCache) -> list[str]:
    return sorted(f.name for f in cache.directory.iterdir() if f.suffix == ".lock")


def test_a_cut_is_kept_and_read_back_as_it_was_made(tmp_path: Path, source: Path) -> None:
    cache = SplitCache(tmp_path / "splits")
    cutter = Cutter(source)
    made = _get(cache, source, cutter)
    assert made == Cut(b"xyz", bytes(range(256)) * 4, 1027, True)
    (kept,) = _files(cache)  # one file, no temporary left beside it
    assert kept.suffix == ".split"
    (lock,) = _locks(cache)  # the lock it was made under: empty, and kept
    assert lock == f".{kept.name}.lock" and (cache.directory / lock).stat().st_size == 0
    assert _get(cache, source, cutter) == made
    assert _get(SplitCache(tmp_path / "splits"), source, cutter) == made  # another process's
    assert cutter.calls == 1


def test_a_changed_source_or_cutter_is_cut_again(tmp_path: Path, source: Path) -> None:
    cache = SplitCache(tmp_path / "splits")
    cutter = Cutter(source)
    _get(cache, source, cutter)
    source.write_bytes(b"abc" + b"new model")  # another size and modification time
    assert _get(cache, source, cutter) == Cut(b"abc", b"new model", 12, False)
    assert cutter.calls == 2
    # Another cutter's code (the same source): another name.
    cache.get(Cut, [source], [split_cache, graph_split], cutter)
    assert cutter.calls == 3
    assert len(_files(cache)) == 3


def test_each_variant_of_a_cut_is_kept_apart(tmp_path: Path, source: Path) -> None:
    # A choice the cutter made for this machine (Kokoro's convolutions on int8 weights or not)
    # names its own file: a cut of the other choice is never read for it.
    cache = SplitCache(tmp_path / "splits")
    cutter = Cutter(source)
    plain = _get(cache, source, cutter)
    for variant in ("int8 weights", "stock weights", "int8 weights"):
        assert cache.get(Cut, [source], [split_cache], cutter, variant).value == plain
    assert cutter.calls == 3
    assert len(_files(cache)) == 3


def _corrupt(path: Path, how: str) -> None:
    data = path.read_bytes()
    if how == "truncated":
        path.write_bytes(data[:-1])
    elif how == "longer":
        path.write_bytes(data + b"\0")
    elif how == "magic":
        path.write_bytes(b"?" + data[1:])
    elif how == "empty":
        path.write_bytes(b"")
    elif how == "header":
        path.write_bytes(split_cache.MAGIC + (5).to_bytes(8, "little") + b"{nope")
    elif how == "fields":
        path.write_bytes(data.replace(b'"layers"', b'"levels"'))
    elif how == "types":
        path.write_bytes(data.replace(b'"flag": true', b'"flag": 1.5'))


@pytest.mark.parametrize(
    "how", ["truncated", "longer", "magic", "empty", "header", "fields", "types"]
)
def test_a_file_that_is_not_a_cut_is_cut_again_and_replaced(
    tmp_path: Path, source: Path, how: str, caplog: pytest.LogCaptureFixture
) -> None:
    cache = SplitCache(tmp_path / "splits")
    cutter = Cutter(source)
    made = _get(cache, source, cutter)
    (kept,) = _files(cache)
    _corrupt(kept, how)
    with caplog.at_level(logging.WARNING, logger=split_cache.__name__):
        assert _get(cache, source, cutter) == made
    assert "is not a cut" in caplog.text
    assert cutter.calls == 2
    assert _get(cache, source, cutter) == made  # replaced: read again
    assert cutter.calls == 2


def test_a_directory_that_cannot_be_written_costs_only_the_cut(
    tmp_path: Path, source: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocked = tmp_path / "a file"
    blocked.write_text("not a directory")
    cache = SplitCache(blocked / "splits")
    cutter = Cutter(source)
    with caplog.at_level(logging.WARNING, logger=split_cache.__name__):
        assert _get(cache, source, cutter) == cutter()
    assert "cannot write" in caplog.text and "--split-cache" in caplog.text
    assert blocked.read_text() == "not a directory"


def test_a_missing_source_is_the_cuts_error(tmp_path: Path) -> None:
    cache = SplitCache(tmp_path / "splits")
    with pytest.raises(FileNotFoundError):
        _get(cache, tmp_path / "gone.onnx", Cutter(tmp_path / "gone.onnx"))
    assert not cache.directory.exists()


def test_processes_that_start_together_each_read_a_whole_cut(tmp_path: Path, source: Path) -> None:
    cache = SplitCache(tmp_path / "splits")
    results: list[Cut] = []
    threads = [
        threading.Thread(target=lambda: results.append(_get(cache, source, Cutter(source))))
        for _ in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 8 and len(set(results)) == 1
    assert len(_files(cache)) == 1


def test_processes_that_start_together_cut_once(tmp_path: Path, source: Path) -> None:
    # The first to find no cut makes it; one that finds none while it does waits for its lock
    # and reads its file, rather than cutting the model a second time beside it.
    cache = SplitCache(tmp_path / "splits")
    cutting, finish = threading.Event(), threading.Event()
    first, second = Cutter(source), Cutter(source)

    def slow() -> Cut:
        cutting.set()
        assert finish.wait(10)
        return first()

    results: dict[str, Cut] = {}
    one = threading.Thread(
        target=lambda: results.update(one=cache.get(Cut, [source], [split_cache], slow).value)
    )
    one.start()
    assert cutting.wait(10)
    other = threading.Thread(target=lambda: results.update(other=_get(cache, source, second)))
    other.start()
    other.join(0.2)
    assert other.is_alive()  # waiting for the lock, not cutting
    finish.set()
    one.join()
    other.join()
    assert first.calls == 1 and second.calls == 0
    assert results["one"] == results["other"]
    assert len(_files(cache)) == 1


def test_a_model_optimized_by_another_process_is_read_not_optimized_again(
    tmp_path: Path, registry: VoiceRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A process that finds no optimized stage waits for the one making it: the stage is
    # optimized once (each of the three stages, for one thread and for two).
    cache = SplitCache(tmp_path / "splits")
    made: list[Path] = []
    optimize = sessions._optimized_session

    def counted(model: bytes, threads: int, optimized: Path) -> object:
        made.append(optimized)
        return optimize(model, threads, optimized)

    monkeypatch.setattr(sessions, "_optimized_session", counted)
    settings = EngineSettings(split_cache=cache)
    loads = [
        threading.Thread(target=lambda: PiperEngine(registry, settings).load("joe"))
        for _ in range(3)
    ]
    for load in loads:
        load.start()
    for load in loads:
        load.join()
    assert len(made) == 6 and len(set(made)) == 6
    assert [f.suffix for f in _files(cache)].count(".onnx") == 6


def test_the_setting_names_the_directory() -> None:
    home = {"HOME": "/home/caller"}
    assert SplitCache.from_setting("off", home) is None
    assert SplitCache.from_setting("auto", home) == SplitCache(
        Path("/home/caller/.cache/voxflow/splits")
    )
    xdg = {**home, "XDG_CACHE_HOME": "/var/cache/me"}
    assert SplitCache.from_setting("auto", xdg) == SplitCache(Path("/var/cache/me/voxflow/splits"))
    assert SplitCache.from_setting("auto", {}) is None  # nowhere to put it
    assert SplitCache.from_setting("/srv/splits", home) == SplitCache(Path("/srv/splits"))
    assert SplitCache.from_env({**home, "VOXFLOW_SPLIT_CACHE": "off"}) is None
    assert SplitCache.from_env(home) == SplitCache.from_setting("auto", home)


def test_the_server_setting_comes_from_the_flag_or_the_environment() -> None:
    assert ServerSettings(port=8000).split_cache == "auto"
    from_env = ServerSettings.from_env({"VOXFLOW_SPLIT_CACHE": "/srv/splits"})
    assert from_env.split_cache == "/srv/splits"
    parser = argparse.ArgumentParser()
    add_serve_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["serve", "--split-cache", "off"])
    flagged = ServerSettings.from_env({"VOXFLOW_SPLIT_CACHE": "/srv"}, **kokoro_overrides(args))
    assert flagged.split_cache == "off"
    with pytest.raises(ValueError, match="split_cache"):
        ServerSettings(port=8000, split_cache=" ")


def test_the_optimized_stages_are_named_by_the_cut_the_stage_and_the_threads(
    tmp_path: Path, source: Path
) -> None:
    assert CachedCut(Cut(b"", b"", 0, False)).optimized("first", 1) is None  # no cache
    cache = SplitCache(tmp_path / "splits")
    cached = _cached(cache, source, Cutter(source))
    (kept,) = _files(cache)
    names = {cached.optimized(stage, n) for stage in ("first", "second") for n in (1, 2)}
    assert len(names) == 4
    for name in names:
        assert name is not None and name.parent == cache.directory
        assert name.name.startswith(kept.stem + ".") and name.suffix == ".onnx"
    # The machine's part of the name is the same on every load.
    again = _cached(SplitCache(tmp_path / "splits"), source, Cutter(source))
    assert again.optimized("first", 1) == cached.optimized("first", 1)


def test_a_voice_loaded_from_the_cache_speaks_as_one_cut_afresh(
    tmp_path: Path, registry: VoiceRegistry, engine: PiperEngine
) -> None:
    cache = SplitCache(tmp_path / "splits")
    info = registry.get("joe")
    settings = EngineSettings(split_cache=cache)  # one thread, and two for a wide job
    PiperEngine(registry, settings).load("joe")  # cuts and optimizes, and keeps both
    files = _files(cache)
    # The cut, and each of its three stages optimized for one and for two threads.
    assert [f.suffix for f in files].count(".split") == 1 and len(files) == 7
    kept = next(f for f in files if f.suffix == ".split")
    with kept.open("rb") as file:
        assert split_cache._load(SplitModel, file) == split_piper_model(onnx.load(info.model_path))
    written = {f: f.stat().st_mtime_ns for f in files}
    cached = PiperEngine(registry, settings)  # reads them back, writes nothing
    voice = VoiceSettings(seed=1)
    for threads in (None, 2):
        heard = cached.prepare("Hello there.", "joe", voice, threads)
        expected = engine.prepare("Hello there.", "joe", voice, threads)
        np.testing.assert_array_equal(
            cached.render(heard, 0, heard.num_frames, threads),
            engine.render(expected, 0, expected.num_frames, threads),
        )
    assert {f: f.stat().st_mtime_ns for f in _files(cache)} == written
