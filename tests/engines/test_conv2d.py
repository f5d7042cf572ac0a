"""Tests for voxflow.engines.conv2d: the decoder as 2-D convolutions, equal to the 1-D graph."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from voxflow.engines.conv2d import as_conv2d
from voxflow.engines.graph_split import split_piper_model
from voxflow.engines.registry import VoiceRegistry


@pytest.fixture(scope="module")
def stages() -> tuple[bytes, bytes, bytes]:
    model = onnx.load(str(VoiceRegistry().get("joe").model_path))
    rewritten = split_piper_model(model)
    plain = split_piper_model(model, conv2d=False)  # what the exported 1-D decoder computes
    return rewritten.decoder_stage, plain.decoder_stage, plain.flow_stage


def _run(stage: bytes, z: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(stage, providers=["CPUExecutionProvider"])
    (audio,) = session.run(None, {"z": z})
    return np.asarray(audio)


def test_the_decoder_runs_as_2d_convolutions(stages: tuple[bytes, bytes, bytes]) -> None:
    rewritten = onnx.load_from_string(stages[0])
    convs = [n for n in rewritten.graph.node if n.op_type in ("Conv", "ConvTranspose")]
    assert convs
    weights = {init.name: init for init in rewritten.graph.initializer}
    assert all(len(weights[n.input[1]].dims) == 4 for n in convs)


@pytest.mark.parametrize("frames", [1, 26, 147])
def test_2d_decoder_equals_the_1d_decoder(stages: tuple[bytes, bytes, bytes], frames: int) -> None:
    z = np.random.default_rng(frames).standard_normal((1, 192, frames), dtype=np.float32)
    rewritten, plain = _run(stages[0], z), _run(stages[1], z)
    assert rewritten.shape == plain.shape
    assert float(np.abs(rewritten - plain).max()) < 1e-5


def test_a_graph_with_other_operations_is_left_alone(stages: tuple[bytes, bytes, bytes]) -> None:
    flow = onnx.load_from_string(stages[2])  # slices, splits, shapes: not a plain conv graph
    assert as_conv2d(flow) is flow
