"""Kokoro's shipped priors (``voxflow.engines.kokoro.prior``): the file format, and the file itself
against the packs and the model."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

from voxflow.engines.kokoro.engine import KokoroEngine
from voxflow.engines.kokoro.prior import (
    CALIBRATION,
    PRIOR_FILE,
    PackPrior,
    load_priors,
    mean_stats,
    save_priors,
)
from voxflow.engines.kokoro.running import Stats
from voxflow.engines.kokoro.voices import default_voices_dir, pack_digest

HEART = "kokoro:af_heart"
SHORT = "Hello there."
SUMS = Path(__file__).parents[3] / "src" / "voxflow" / "engines" / "kokoro" / "voices.sha256"


def _stats(rng: np.random.Generator, channels: list[int]) -> Stats:
    result: Stats = []
    for c in channels:
        mean = rng.normal(0.0, 3.0, (1, c, 1)).astype(np.float32)
        # Some variances tiny next to the squared mean: the case mean squares would round away.
        variance = rng.choice([1e-4, 1.0, 50.0], (1, c, 1)).astype(np.float32)
        result.append((mean, (mean * mean + variance).astype(np.float32)))
    return result


def _variance(layer: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    mean, meansq = layer
    result: np.ndarray = meansq.astype(np.float64) - mean.astype(np.float64) ** 2
    return result


def test_saved_priors_load_back_within_float16_rounding(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    packs = [PackPrior(name, name * 8, _stats(rng, [5, 12, 3])) for name in ("aa", "bb", "jj")]
    path = tmp_path / "priors.npz"
    save_priors(path, packs, ["One.", "Two."])
    loaded = load_priors(path, layers=3)
    assert sorted(loaded.by_digest) == ["aaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbb", "jj" * 8]
    for pack in packs:
        got = loaded.for_pack(pack.digest, "en_US")
        assert [m.shape for m, _ in got] == [(1, 5, 1), (1, 12, 1), (1, 3, 1)]
        for layer, got_layer in zip(pack.stats, got, strict=True):
            assert got_layer[0].dtype == got_layer[1].dtype == np.float32
            np.testing.assert_allclose(got_layer[0], layer[0], rtol=1e-3, atol=1e-6)
            # The variance survives, however small next to the squared mean.
            np.testing.assert_allclose(_variance(got_layer), _variance(layer), rtol=0.05, atol=1e-5)
    # Any other pack streams from the mean of the shipped ones of its language (their first
    # letter), or of all of them for a language none is of.
    prior = {p.name: loaded.for_pack(p.digest, "") for p in packs}
    other = loaded.for_pack("0" * 64, "fr_FR")
    assert other is loaded.mean
    want = mean_stats(list(prior.values()))
    np.testing.assert_allclose(other[1][0], want[1][0], rtol=1e-6)
    japanese = loaded.for_pack("0" * 64, "ja_JP")
    np.testing.assert_array_equal(japanese[1][0], prior["jj"][1][0])
    english = loaded.for_pack("0" * 64, "en_US")
    want = mean_stats([prior["aa"]])
    np.testing.assert_allclose(english[1][0], want[1][0], rtol=1e-6)
    with np.load(path) as data:
        assert list(data["names"]) == ["aa", "bb", "jj"]
        assert list(data["sentences"]) == ["One.", "Two."]


def test_priors_of_another_shape_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "priors.npz"
    save_priors(path, [PackPrior("aa", "d1", _stats(np.random.default_rng(2), [4, 4]))])
    with pytest.raises(ValueError, match="priors for 2 layers, the model has 54"):
        load_priors(path, layers=54)
    with np.load(path) as data:
        arrays = dict(data)
    arrays["mean"] = arrays["mean"][:, :-1]
    np.savez(path, **arrays)
    shapes = r"means \(1, 7\) and variances \(1, 8\), expected \(1, 8\)"
    with pytest.raises(ValueError, match=shapes):
        load_priors(path)
    np.savez(path, channels=arrays["channels"])
    with pytest.raises(ValueError, match="not Kokoro priors"):
        load_priors(path)


def test_mean_stats_weighs_layer_by_layer() -> None:
    rng = np.random.default_rng(3)
    a, b = _stats(rng, [3, 2]), _stats(rng, [3, 2])
    even, weighted = mean_stats([a, b]), mean_stats([a, b], [0.25, 0.75])
    for i in range(2):
        for part in range(2):
            np.testing.assert_allclose(even[i][part], (a[i][part] + b[i][part]) / 2, rtol=1e-6)
            np.testing.assert_allclose(
                weighted[i][part], 0.25 * a[i][part] + 0.75 * b[i][part], rtol=1e-6
            )
    with pytest.raises(ValueError, match="no statistics"):
        mean_stats([])


def test_the_shipped_priors_are_every_packs_calibration() -> None:
    # One prior per pack of voices.sha256 and voices-ja.sha256, under that pack's digest.
    with np.load(PRIOR_FILE) as data:
        names, digests = [str(n) for n in data["names"]], [str(d) for d in data["digests"]]
        shipped = dict(zip(names, digests, strict=True))
        sentences = tuple(str(s) for s in data["sentences"])
    listed = {
        name.removesuffix(".bin"): digest
        for sums in (SUMS, SUMS.with_name("voices-ja.sha256"))
        for digest, name in (line.split() for line in sums.read_text().splitlines())
    }
    assert shipped == listed and len(shipped) == 33
    assert sentences == tuple(itertools.chain.from_iterable(CALIBRATION.values()))
    # Installed packs are those packs (make kokoro-voices checks them), so each finds its own.
    installed = default_voices_dir() / "af_heart.bin"
    assert pack_digest(installed) == listed["af_heart"]


def test_the_shipped_priors_fit_the_model_layer_by_layer(kokoro_engine: KokoroEngine) -> None:
    prior = kokoro_engine.load(HEART).prior
    own = kokoro_engine.whole_statistics(SHORT, HEART)
    assert [m.shape for m, _ in prior] == [m.shape for m, _ in own]

    def distance(a: np.ndarray, b: np.ndarray) -> float:
        return float(np.linalg.norm(a - b) / np.linalg.norm(b))

    # Layer by layer the prior resembles a whole rendering's statistics, channel by channel
    # (measured: median relative distance of the means 0.15); moved by one channel it does not.
    near = np.median([distance(p, o) for (p, _), (o, _) in zip(prior, own, strict=True)])
    moved = np.median(
        [distance(np.roll(p, 1, axis=1), o) for (p, _), (o, _) in zip(prior, own, strict=True)]
    )
    assert near < 0.5 and moved > 2 * near
