"""Compute Kokoro's shipped priors again: ``python -m voxflow.engines.kokoro.calibrate``.

Renders each ``CALIBRATION`` sentence of a pack's language whole with each pack (every pack
installed, or the ones named), averages the decoder's normalisation statistics per pack, and writes
``voxflow.engines.kokoro.prior.PRIOR_FILE`` (or ``--out``). About ten seconds a pack on two
cores. Needed only when the model, the packs or the calibration sentences change.
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Sequence
from pathlib import Path

from voxflow.engines.kokoro.engine import KokoroEngine, KokoroSettings
from voxflow.engines.kokoro.prior import (
    CALIBRATION,
    PRIOR_FILE,
    PackPrior,
    mean_stats,
    save_priors,
)
from voxflow.engines.kokoro.running import Stats
from voxflow.engines.kokoro.voices import (
    PREFIX,
    default_voices_dir,
    find_packs,
    language_of,
    pack_digest,
)
from voxflow.engines.registry import VoiceRegistry
from voxflow.text.language import text_language_of

log = logging.getLogger(__name__)


def calibrate(engine: KokoroEngine, pack: str, sentences: Sequence[str] | None = None) -> Stats:
    """A pack's prior: its mean statistics over ``sentences`` (its language's ``CALIBRATION``
    by default), each rendered whole."""
    log.info("calibrating %s", pack)
    if sentences is None:
        sentences = CALIBRATION[text_language_of(language_of(pack) or "")]
    return mean_stats([engine.whole_statistics(text, PREFIX + pack) for text in sentences])


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m voxflow.engines.kokoro.calibrate")
    parser.add_argument("--voices", type=Path, default=default_voices_dir())
    parser.add_argument("--out", type=Path, default=PRIOR_FILE)
    parser.add_argument("packs", nargs="*", help="packs to calibrate (default: all installed)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    installed = find_packs(args.voices)
    packs = args.packs or sorted(installed)
    missing = [p for p in packs if p not in installed]
    if not packs or missing:
        parser.error(f"no such packs in {args.voices}: {missing or 'none at all'}")
    engine = KokoroEngine(
        VoiceRegistry(kokoro_dir=args.voices), KokoroSettings(intra_op_threads=2, wide_threads=2)
    )
    priors = [
        PackPrior(pack, pack_digest(installed[pack]), calibrate(engine, pack)) for pack in packs
    ]
    save_priors(args.out, priors)
    log.info("wrote %s (%d packs)", args.out, len(packs))


if __name__ == "__main__":
    main()
