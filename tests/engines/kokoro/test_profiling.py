"""Tests for voxflow.engines.kokoro.profiling: a span of the engine's rendering profiled, its own
sessions back after it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from voxflow.engines.base import VoiceSettings
from voxflow.engines.kokoro.engine import KokoroEngine
from voxflow.engines.kokoro.profiling import profiled_kokoro

VOICE = "kokoro:af_heart"


def _render(engine: KokoroEngine, text: str) -> np.ndarray:
    utterance = engine.prepare(text, VOICE, VoiceSettings(), 2)
    return engine.render(utterance, 0, utterance.num_frames, 2)


def test_a_profiled_span_records_both_stages_and_gives_the_engine_its_sessions_back(
    kokoro_engine: KokoroEngine, tmp_path: Path
) -> None:
    model = kokoro_engine.model()
    own = model.stages(2)
    before = _render(kokoro_engine, "Good morning.")
    with profiled_kokoro(kokoro_engine, tmp_path, threads=2) as files:
        assert files.prosody is None  # written when the span ends
        inside = _render(kokoro_engine, "Good morning.")
        assert model.stages(2) is not own
    assert model.stages(2) is own
    # The same rendering: the profiled sessions are the engine's graph with its options.
    np.testing.assert_allclose(inside, before, atol=1e-4)
    assert files.prosody is not None and files.decoder is not None
    ops = set()
    for path in (files.prosody, files.decoder):
        assert path.parent == tmp_path
        ops |= {
            e["args"]["op_name"] for e in json.loads(path.read_text()) if e.get("cat") == "Node"
        }
    assert {"MatMulInteger", "ConvInteger", "ConvTranspose", "Sin"} <= ops
    # The weights the profile leaves out: each upsampling ConvTranspose's (in, out, kernel).
    ups = [shape for name, shape in files.weights.items() if "/ups." in name]
    assert ups and all(len(shape) == 3 for shape in ups)


def test_a_span_that_fails_still_gives_the_sessions_back(
    kokoro_engine: KokoroEngine, tmp_path: Path
) -> None:
    model = kokoro_engine.model()
    own = model.stages(2)
    with pytest.raises(KeyError), profiled_kokoro(kokoro_engine, tmp_path, threads=2):
        raise KeyError("a render failed")
    assert model.stages(2) is own
