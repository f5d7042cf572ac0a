"""Kokoro's voice names and style packs: parsing ``kokoro:`` names and blends, finding packs in a
directory, reading them and mixing them (no model needed)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

from voxflow.engines.base import VoiceNotFoundError
from voxflow.engines.kokoro.voices import (
    MAX_BLEND,
    PACK_BYTES,
    PACK_ROWS,
    STYLE_DIM,
    Blend,
    BlendError,
    blend_packs,
    default_voices_dir,
    find_packs,
    language_of,
    load_blend,
    load_pack,
    pack_digest,
    parse_voice,
)
from voxflow.engines.phonemizers import phonemizer_for
from voxflow.engines.registry import VoiceRegistry


def _write_pack(path: Path, seed: int) -> np.ndarray:
    pack = np.random.default_rng(seed).standard_normal((PACK_ROWS, STYLE_DIM)).astype("<f4")
    pack.tofile(path)
    return pack


# -- parse_voice ----------------------------------------------------------------------------------


def test_a_single_pack_weighs_one_and_keeps_its_name() -> None:
    blend = parse_voice("kokoro:af_heart")
    assert blend == Blend((("af_heart", 1.0),))
    assert blend.name == "kokoro:af_heart"


def test_blend_weights_are_normalised_in_the_order_given() -> None:
    blend = parse_voice("kokoro:af_heart*3+am_michael*1")
    assert [pack for pack, _ in blend.parts] == ["af_heart", "am_michael"]
    assert [weight for _, weight in blend.parts] == pytest.approx([0.75, 0.25])
    assert blend.name == "kokoro:af_heart*0.75+am_michael*0.25"
    # Already normalised weights stay as they are; the canonical name parses back to itself.
    again = parse_voice("kokoro:af_heart*0.7+am_michael*0.3")
    assert [weight for _, weight in again.parts] == pytest.approx([0.7, 0.3])
    assert parse_voice(again.name) == again


def test_a_pack_without_a_weight_weighs_one() -> None:
    even = parse_voice("kokoro:af_heart+af_bella")
    assert even.parts == (("af_heart", 0.5), ("af_bella", 0.5))
    assert even.name == "kokoro:af_heart*0.5+af_bella*0.5"
    mixed = parse_voice("kokoro:af_heart*2+af_bella+bm_george")  # 2 : 1 : 1
    assert [weight for _, weight in mixed.parts] == pytest.approx([0.5, 0.25, 0.25])
    assert sum(weight for _, weight in mixed.parts) == pytest.approx(1.0)


def test_the_most_packs_a_blend_mixes() -> None:
    names = ["af_heart", "af_bella", "am_adam", "bf_emma", "bm_lewis"][:MAX_BLEND]
    blend = parse_voice("kokoro:" + "+".join(names))
    assert [pack for pack, _ in blend.parts] == names
    assert [weight for _, weight in blend.parts] == pytest.approx([1 / MAX_BLEND] * MAX_BLEND)


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("af_heart", "is not a Kokoro voice"),
        ("Kokoro:af_heart", "is not a Kokoro voice"),
        ("kokoro:", "cannot read"),
        ("kokoro:AF_heart", "cannot read"),
        ("kokoro:af-heart", "cannot read"),
        ("kokoro:af_heart*", "cannot read"),
        ("kokoro:af_heart*-1", "cannot read"),
        ("kokoro:af_heart**2", "cannot read"),
        ("kokoro:af_heart+", "cannot read"),
        ("kokoro:af_heart +af_bella", "cannot read"),
        ("kokoro:af_heart+af_heart", "appears twice"),
        ("kokoro:af_heart*0.5+am_adam+af_heart*0.5", "appears twice"),
        ("kokoro:a+b+c+d+e", "1 to 4 voices, got 5"),
        ("kokoro:af_heart*0", "must be in \\(0, 100\\]"),
        ("kokoro:af_heart*0.0+af_bella", "must be in \\(0, 100\\]"),
        ("kokoro:af_heart*100.5", "must be in \\(0, 100\\]"),
    ],
)
def test_malformed_names_are_refused(name: str, message: str) -> None:
    with pytest.raises(BlendError, match=message):
        parse_voice(name)


def test_a_blend_error_is_a_value_error() -> None:
    # Callers that catch ValueError (option checks) catch it too.
    assert issubclass(BlendError, ValueError)


def test_a_packs_first_letter_is_its_language() -> None:
    assert [language_of(p) for p in ("af_heart", "am_adam", "bf_emma", "bm_lewis")] == [
        "en_US", "en_US", "en_GB", "en_GB",
    ]  # fmt: skip
    assert language_of("jf_alpha") == language_of("jm_kumo") == "ja_JP"
    assert language_of("zf_xiaobei") is None and language_of("ef_dora") is None


# -- find_packs -----------------------------------------------------------------------------------


def test_find_packs_keeps_packs_of_known_languages_of_the_right_size(tmp_path: Path) -> None:
    for name in ("af_one", "bm_two", "am_three", "jf_four"):
        _write_pack(tmp_path / f"{name}.bin", 0)
    (tmp_path / "af_short.bin").write_bytes(b"\0" * (PACK_BYTES - 4))  # wrong size
    (tmp_path / "af_long.bin").write_bytes(b"\0" * (PACK_BYTES + 4))
    for other in ("zf_xiaobei", "ef_dora", "ff_siwis"):  # languages voxflow does not read
        _write_pack(tmp_path / f"{other}.bin", 0)
    _write_pack(tmp_path / "Af_caps.bin", 0)  # not a pack name
    _write_pack(tmp_path / "af_one.npy", 0)  # not .bin
    packs = find_packs(tmp_path)
    names = ("af_one", "am_three", "bm_two", "jf_four")
    assert packs == {name: tmp_path / f"{name}.bin" for name in names}
    assert list(packs) == list(names)  # sorted by name


def test_find_packs_of_a_missing_directory_is_empty(tmp_path: Path) -> None:
    assert find_packs(tmp_path / "missing") == {}
    assert find_packs(tmp_path) == {}


def test_the_installed_packs_are_the_28_english_and_5_japanese_voices() -> None:
    packs = find_packs(default_voices_dir())
    assert len(packs) == 33, f"make kokoro-voices installs them into {default_voices_dir()}"
    assert {name[:2] for name in packs} == {"af", "am", "bf", "bm", "jf", "jm"}
    assert sorted(name for name in packs if name[0] == "j") == [
        "jf_alpha", "jf_gongitsune", "jf_nezumi", "jf_tebukuro", "jm_kumo",
    ]  # fmt: skip
    assert "af_heart" in packs


# -- load_pack and blend_packs --------------------------------------------------------------------


def test_load_pack_reads_510_rows_of_256_float32_and_the_files_digest(tmp_path: Path) -> None:
    written = _write_pack(tmp_path / "af_x.bin", 1)
    pack = load_pack(tmp_path / "af_x.bin")
    assert pack.styles.shape == (PACK_ROWS, STYLE_DIM) == (510, 256)
    assert pack.styles.dtype == np.float32 and pack.styles.flags.writeable
    np.testing.assert_array_equal(pack.styles, written)
    assert pack.digest == pack_digest(tmp_path / "af_x.bin")
    assert pack.digest == hashlib.sha256((tmp_path / "af_x.bin").read_bytes()).hexdigest()


def test_load_pack_refuses_a_file_of_another_size(tmp_path: Path) -> None:
    (tmp_path / "af_bad.bin").write_bytes(b"\0" * (PACK_BYTES - 1024))
    with pytest.raises(ValueError, match="not a Kokoro voice pack"):
        load_pack(tmp_path / "af_bad.bin")
    (tmp_path / "af_empty.bin").write_bytes(b"")
    with pytest.raises(ValueError, match="not a Kokoro voice pack"):
        load_pack(tmp_path / "af_empty.bin")


def test_a_blend_is_the_weighted_mean_of_its_packs(tmp_path: Path) -> None:
    written = {name: _write_pack(tmp_path / f"{name}.bin", seed) for seed, name in enumerate("abc")}
    paths = {name: tmp_path / f"{name}.bin" for name in written}
    blend = parse_voice("kokoro:a*0.5+b*0.3+c*0.2")
    packs = load_blend(blend, paths)
    assert sorted(packs) == ["a", "b", "c"]
    mixed = blend_packs(blend, packs)
    expected = 0.5 * written["a"] + 0.3 * written["b"] + 0.2 * written["c"]
    assert mixed.shape == (PACK_ROWS, STYLE_DIM) and mixed.dtype == np.float32
    np.testing.assert_allclose(mixed, expected, rtol=1e-6, atol=1e-6)
    # One pack is that pack; an even blend of a pack with itself cannot be written (refused).
    one = parse_voice("kokoro:b")
    np.testing.assert_array_equal(blend_packs(one, load_blend(one, paths)), written["b"])


def test_a_blend_of_installed_packs_is_their_weighted_mean() -> None:
    packs = find_packs(default_voices_dir())
    blend = parse_voice("kokoro:af_heart*0.7+am_michael*0.3")
    expected = (
        0.7 * load_pack(packs["af_heart"]).styles + 0.3 * load_pack(packs["am_michael"]).styles
    )
    mixed = blend_packs(blend, load_blend(blend, packs))
    np.testing.assert_allclose(mixed, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    ("pack", "tomato"), [("af_heart", "təmˈeɪɾoʊ"), ("bm_george", "təmˈɑːtəʊ")]
)
def test_each_accent_has_an_espeak_voice_that_speaks_it(pack: str, tomato: str) -> None:
    """The accent's espeak-ng voice exists in piper's data (its name for British English is
    ``en``, not ``en-gb``) and gives that accent's vowels."""
    phonemes = phonemizer_for(language_of(pack) or "").phonemize("tomato").phonemes
    assert "".join(phonemes) == tomato


# -- the registry's Kokoro voices of each language ------------------------------------------------


def _registry(directory: Path, packs: tuple[str, ...]) -> VoiceRegistry:
    for seed, name in enumerate(packs):
        _write_pack(directory / f"{name}.bin", seed)
    return VoiceRegistry(kokoro_dir=directory)


def test_japanese_packs_are_voices_of_ja_jp(tmp_path: Path) -> None:
    registry = _registry(tmp_path, ("af_one", "jf_two", "jm_three"))
    assert registry.get("kokoro:jf_two").language == "ja_JP"
    assert registry.get("kokoro:af_one").language == "en_US"
    # A blend of one language's packs speaks it.
    assert registry.get("kokoro:jf_two*0.5+jm_three*0.5").language == "ja_JP"


def test_a_blend_across_languages_is_refused_with_the_reason(tmp_path: Path) -> None:
    registry = _registry(tmp_path, ("af_one", "jf_two"))
    with pytest.raises(VoiceNotFoundError) as error:
        registry.get("kokoro:af_one+jf_two")
    assert "a blend mixes packs of one language: af_one speaks en_US, jf_two speaks ja_JP" in str(
        error.value
    )


def test_an_uninstalled_pack_names_the_make_target(tmp_path: Path) -> None:
    registry = _registry(tmp_path, ("af_one",))
    with pytest.raises(VoiceNotFoundError, match="jf_alpha is not installed: make kokoro-voices"):
        registry.get("kokoro:jf_alpha")
    with pytest.raises(VoiceNotFoundError, match=r"first letter is its language .*not zf_x"):
        registry.get("kokoro:zf_x")
    with pytest.raises(VoiceNotFoundError, match="need voxflow serve --kokoro"):
        VoiceRegistry().get("kokoro:af_one")
    with pytest.raises(VoiceNotFoundError) as plain:
        registry.get("nobody")
    assert "(" not in str(plain.value).split(";")[0]  # nothing to add for a name like that
