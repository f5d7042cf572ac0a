from __future__ import annotations

import json

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from voxflow.engines.graph_split import GraphSplitError, split_piper_model
from voxflow.engines.registry import VoiceRegistry


@pytest.fixture(scope="module")
def model() -> onnx.ModelProto:
    return onnx.load(str(VoiceRegistry().get("joe").model_path))


def _session(data: bytes | str) -> ort.InferenceSession:
    return ort.InferenceSession(data, providers=["CPUExecutionProvider"])


def test_stages_have_the_expected_interfaces(model: onnx.ModelProto) -> None:
    split = split_piper_model(model)
    text = _session(split.text_stage)
    flow = _session(split.flow_stage)
    decoder = _session(split.decoder_stage)
    assert [i.name for i in text.get_inputs()] == ["input", "input_lengths", "scales", "dp_noise"]
    assert [o.name for o in text.get_outputs()] == ["m_p", "logs_p", "durations"]
    assert [i.name for i in flow.get_inputs()] == ["z_p", "y_mask"]
    assert [o.name for o in flow.get_outputs()] == ["z"]
    assert [i.name for i in decoder.get_inputs()] == ["z"]
    assert [o.name for o in decoder.get_outputs()] == ["output"]
    assert split.latent_channels == 192
    assert not split.has_speaker_input


def test_split_stages_reproduce_the_original_graph_without_noise(
    model: onnx.ModelProto,
) -> None:
    # With both noise scales at zero the original graph is deterministic, so the two stages
    # chained must give the very same audio.
    registry = VoiceRegistry()
    config = json.loads(registry.get("joe").config_path.read_text())
    id_map = config["phoneme_id_map"]
    ids = [1, 0]
    for phoneme in "həlˈoʊ wˈɜːld.":
        ids += [*id_map[phoneme], 0]
    ids += [2]
    feeds = {
        "input": np.array([ids], dtype=np.int64),
        "input_lengths": np.array([len(ids)], dtype=np.int64),
        "scales": np.array([0.0, 1.0, 0.0], dtype=np.float32),
    }
    (expected,) = _session(model.SerializeToString()).run(None, feeds)

    split = split_piper_model(model)
    noise = np.random.default_rng(0).standard_normal((1, 2, len(ids)), dtype=np.float32)
    m_p, _logs_p, durations = _session(split.text_stage).run(None, {**feeds, "dp_noise": noise})
    assert int(durations.sum()) == m_p.shape[2]
    (z,) = _session(split.flow_stage).run(
        None, {"z_p": m_p, "y_mask": np.ones((1, 1, m_p.shape[2]), dtype=np.float32)}
    )
    (audio,) = _session(split.decoder_stage).run(None, {"z": z})
    assert audio.shape == expected.shape
    np.testing.assert_allclose(audio, expected, atol=1e-4)


def test_a_graph_that_is_not_vits_is_rejected_with_a_clear_error() -> None:
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])],
        "tiny",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
    )
    with pytest.raises(GraphSplitError, match="RandomNormalLike"):
        split_piper_model(helper.make_model(graph))
