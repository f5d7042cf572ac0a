"""Cut models kept on disk between starts (``--split-cache``).

Loading a voice cuts its ONNX model into stages (``graph_split``, ``kokoro.graph``): 0.3 s of
CPU for the bundled voice and 0.6 s for Kokoro's model, in every process that loads them, at
every start. A ``SplitCache`` keeps each cut in one file of its directory, named by a digest of
all the cut depends on: the source files (resolved path, size, modification time), the source
code of the modules that cut and optimize it (``code``), this format's version and onnx's. Any
change gives another name, so a stale cut is never read; an old file stays until the operator
clears the directory (a file is the size of its model).

Beside each cut, ``sessions.cpu_session`` keeps its stages as ONNX Runtime optimizes them
(``CachedCut.optimized``), which makes a session in a third of the time (0.19 s of CPU -> 0.06 s
a thread count for the bundled voice's stages) and the same session bit for bit. Optimized
graphs depend on the machine too: their names add a digest of ONNX Runtime's version, the
architecture and the CPU's instruction set extensions. With both, the bundled voice loads in
0.17 s of CPU instead of 0.66 s.

A file is written under a temporary name and renamed, so processes that start together never
read half of one; and it is made under an exclusive lock of its own (``made_once``, an empty
``.NAME.lock`` file beside it that stays), so that they do not each make it: the first cuts or
optimizes, the others wait and read its file (three processes loading Kokoro's model and the
bundled voice at once on an empty cache: 8 to 10 s of CPU together instead of 14 to 15). A
directory that cannot be written is logged and passed by: the model is cut at every start, as
without a cache. A file that does not hold a cut of the expected shape is cut again and
replaced.

The format: ``MAGIC``, the header's length (8 bytes, little-endian), the header (JSON: the
cut's scalar fields, and its stages' names and lengths in order), then the stages' bytes.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import hashlib
import json
import logging
import os
import platform
import tempfile
import typing
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import IO, TYPE_CHECKING, Any, Generic, TypeVar

import onnx
import onnxruntime as ort

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

__all__ = ["CachedCut", "SplitCache", "cached_cut", "made_once", "written_whole"]

log = logging.getLogger(__name__)

MAGIC = b"voxflow split 1\n"
_MAX_HEADER = 1 << 16

Cut = TypeVar("Cut", bound="DataclassInstance")


@dataclass(frozen=True)
class CachedCut(Generic[Cut]):
    """A cut, and where the cache keeps its stages as ONNX Runtime optimizes them on this
    machine (``sessions.cpu_session``); ``stem`` None: nowhere (no cache)."""

    value: Cut
    stem: Path | None = None

    def optimized(self, stage: str, threads: int) -> Path | None:
        """The file of ``stage`` (a field name of the cut) optimized for ``threads``."""
        if self.stem is None:
            return None
        return self.stem.with_name(f"{self.stem.name}.{stage}.{threads}t.onnx")


@dataclass(frozen=True)
class SplitCache:
    """The cuts of models, one file each, in ``directory``."""

    directory: Path

    @classmethod
    def from_setting(cls, setting: str, env: Mapping[str, str]) -> SplitCache | None:
        """``off``: none; ``auto``: ``$XDG_CACHE_HOME/voxflow/splits`` (``~/.cache`` without
        it; none where neither is set); anything else: that directory."""
        if setting == "off":
            return None
        if setting != "auto":
            return cls(Path(setting).expanduser())
        if env.get("XDG_CACHE_HOME"):
            return cls(Path(env["XDG_CACHE_HOME"]) / "voxflow" / "splits")
        if env.get("HOME"):
            return cls(Path(env["HOME"]) / ".cache" / "voxflow" / "splits")
        return None

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> SplitCache | None:
        """As ``VOXFLOW_SPLIT_CACHE`` says (``auto`` without it): what the CLI's own commands
        use (``voxflow serve`` has ``ServerSettings.split_cache``)."""
        return cls.from_setting(env.get("VOXFLOW_SPLIT_CACHE", "auto"), env)

    def get(
        self,
        kind: type[Cut],
        sources: Sequence[Path],
        code: Sequence[ModuleType],
        cut: Callable[[], Cut],
        variant: str = "",
    ) -> CachedCut[Cut]:
        """The cut of ``sources`` by ``code``: read from the cache if there, else ``cut()``
        (then kept). ``kind``'s fields are its stages (``bytes``) and scalars (int, bool).
        ``variant`` names what else the cut depends on (a choice the code made for this
        machine): each variant is a file of its own."""
        try:
            path = self.directory / _name(kind, sources, code, variant)
        except OSError:
            # A source that is not there: the cut says so, as without a cache.
            return CachedCut(cut())
        # The optimized stages depend on the machine too (ONNX Runtime's graph transformers
        # specialise for the CPU's instructions).
        stem = path.with_name(f"{path.stem}.{_machine()}")
        found = self._read(kind, path)
        if found is not None:
            return CachedCut(found, stem)
        missing = not path.exists()  # else there, but not a cut: made again
        with made_once(path):
            if missing and path.exists():  # made by another process while this one waited
                found = self._read(kind, path)
            if found is None:
                found = cut()
                self._write(path, found)
        return CachedCut(found, stem)

    def _read(self, kind: type[Cut], path: Path) -> Cut | None:
        try:
            with path.open("rb") as file:
                return _load(kind, file)
        except FileNotFoundError:
            return None
        except OSError as error:
            log.warning("split cache: cannot read %s (%s); cutting the model", path, error)
        except ValueError as error:
            log.warning("split cache: %s is not a cut (%s); cutting the model again", path, error)
        return None

    def _write(self, path: Path, made: DataclassInstance) -> None:
        try:
            with written_whole(path) as temporary, temporary.open("wb") as file:
                _dump(made, file)
            log.info("split cache: kept %s", path)
        except OSError as error:
            log.warning(
                "split cache: cannot write %s (%s); the model is cut at every start "
                "(--split-cache DIR or off)",
                path,
                error,
            )


@contextlib.contextmanager
def written_whole(path: Path) -> Iterator[Path]:
    """A temporary file beside ``path`` for the block to write; renamed to ``path`` when the
    block ends, removed when it fails, so that no process reads half of ``path``. Making the
    directory, the file or the rename raises ``OSError``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor, name = tempfile.mkstemp(dir=path.parent, prefix=".partial-", suffix=path.suffix)
    os.close(descriptor)
    temporary = Path(name)
    try:
        yield temporary
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


@contextlib.contextmanager
def made_once(path: Path) -> Iterator[None]:
    """Hold the exclusive lock of making ``path`` (``.NAME.lock`` beside it): a process that
    finds ``path`` missing makes it inside this block and looks again once in, since another
    may have made it while this one waited. Where the lock cannot be taken (a directory that
    cannot be written), the block runs unlocked: making the file is then refused as before."""
    descriptor = _lock_file(path.with_name(f".{path.name}.lock"))
    try:
        if descriptor is not None:
            fcntl.flock(descriptor, fcntl.LOCK_EX)  # released when the descriptor closes
        yield
    finally:
        if descriptor is not None:
            os.close(descriptor)


def _lock_file(lock: Path) -> int | None:
    """An open descriptor of ``lock`` (made empty if missing), or None where it cannot be."""
    try:
        lock.parent.mkdir(parents=True, exist_ok=True)
        return os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError:
        return None


def cached_cut(
    cache: SplitCache | None,
    kind: type[Cut],
    sources: Sequence[Path],
    code: Sequence[ModuleType],
    cut: Callable[[], Cut],
    variant: str = "",
) -> CachedCut[Cut]:
    """``cache.get(...)``; without a cache, ``cut()`` with nowhere to keep it or its stages."""
    if cache is None:
        return CachedCut(cut())
    return cache.get(kind, sources, code, cut, variant)


def _name(
    kind: type[Any], sources: Sequence[Path], code: Sequence[ModuleType], variant: str = ""
) -> str:
    digest = hashlib.sha256(MAGIC + onnx.__version__.encode() + kind.__qualname__.encode())
    if variant:
        digest.update(b"\0variant\0" + variant.encode())
    for source in sources:
        resolved = source.resolve()
        stat = resolved.stat()
        digest.update(f"\0{resolved}\0{stat.st_size}\0{stat.st_mtime_ns}".encode())
    for module in code:
        if module.__file__ is None:
            raise ValueError(f"module {module.__name__} has no source file")
        digest.update(b"\0" + Path(module.__file__).read_bytes())
    return f"{kind.__name__.lower()}-{digest.hexdigest()[:32]}.split"


_CPU_FLAGS = ("flags", "Features")


def _machine() -> str:
    """A digest of what ONNX Runtime's optimized graphs depend on: its version, the machine's
    architecture and the CPU's instruction set extensions."""
    flags = platform.processor()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            # x86 names the extensions "flags", ARM "Features".
            flags = next((line for line in cpuinfo if line.startswith(_CPU_FLAGS)), flags)
    except OSError:
        pass  # not Linux: the processor's name is what there is
    identity = f"{ort.__version__}\0{platform.machine()}\0{flags}"
    return hashlib.sha256(identity.encode()).hexdigest()[:16]


def _dump(made: DataclassInstance, file: IO[bytes]) -> None:
    scalars: dict[str, int | bool] = {}
    stages: list[tuple[str, bytes]] = []
    for field in dataclasses.fields(made):
        value = getattr(made, field.name)
        if isinstance(value, bytes):
            stages.append((field.name, value))
        elif isinstance(value, int):  # bool is an int
            scalars[field.name] = value
        else:
            raise TypeError(f"{type(made).__name__}.{field.name} is neither bytes nor a scalar")
    header = json.dumps(
        {"scalars": scalars, "stages": [[name, len(data)] for name, data in stages]}
    ).encode()
    file.write(MAGIC + len(header).to_bytes(8, "little") + header)
    for _, data in stages:
        file.write(data)


def _load(kind: type[Cut], file: IO[bytes]) -> Cut:
    """The cut in ``file`` (``ValueError`` when it is not one of ``kind``)."""
    if file.read(len(MAGIC)) != MAGIC:
        raise ValueError("wrong magic")
    size = int.from_bytes(file.read(8), "little")
    if not 0 < size <= _MAX_HEADER:
        raise ValueError("bad header length")
    try:
        header = json.loads(file.read(size))
        scalars: dict[str, object] = dict(header["scalars"])
        lengths = [(str(name), int(length)) for name, length in header["stages"]]
    except (json.JSONDecodeError, KeyError, TypeError, ValueError) as error:
        raise ValueError(f"bad header: {error}") from None
    values: dict[str, object] = dict(scalars)
    for name, length in lengths:
        data = file.read(length)
        if len(data) != length:
            raise ValueError(f"stage {name} is cut short")
        values[name] = data
    if file.read(1):
        raise ValueError("bytes after the last stage")
    types = typing.get_type_hints(kind)
    expected = {field.name for field in dataclasses.fields(kind)}
    if set(values) != expected or len(values) != len(scalars) + len(lengths):
        raise ValueError(f"fields {sorted(values)}, expected {sorted(expected)}")
    for name, value in values.items():
        if not isinstance(value, types[name]):
            raise ValueError(f"{name} is a {type(value).__name__}, not a {types[name].__name__}")
    return kind(**values)
