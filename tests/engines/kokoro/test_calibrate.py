"""The calibration that computes Kokoro's shipped priors (``voxflow.engines.kokoro.calibrate``),
with the real model."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from voxflow.engines.kokoro.calibrate import calibrate, main
from voxflow.engines.kokoro.engine import KokoroEngine

HEART = "kokoro:af_heart"
SHORT = "Hello there."


def test_calibrate_averages_whole_renderings(kokoro_engine: KokoroEngine) -> None:
    got = calibrate(kokoro_engine, "af_heart", [SHORT, SHORT])
    want = kokoro_engine.whole_statistics(SHORT, HEART)
    for (mean, meansq), (w_mean, w_meansq) in zip(got, want, strict=True):
        np.testing.assert_allclose(mean, w_mean, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(meansq, w_meansq, rtol=1e-5, atol=1e-6)


def test_calibrate_refuses_a_pack_it_does_not_have(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--out", str(tmp_path / "p.npz"), "af_heart", "zz_nobody"])
    assert exited.value.code == 2
    assert "zz_nobody" in capsys.readouterr().err
    assert not (tmp_path / "p.npz").exists()
