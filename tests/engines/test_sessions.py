"""CPU sessions, and the optimized graphs the split cache keeps for them: a kept graph is the
one the session is made from, and one that does not load or cannot be written costs nothing but
the time."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from voxflow.engines import sessions
from voxflow.engines.sessions import cpu_session

INPUT = np.arange(8, dtype=np.float32).reshape(2, 4) - 3.0


def _model(scale: float) -> bytes:
    """relu(x @ (scale * W) + b): a graph ONNX Runtime's optimizer fuses (MatMul + Add)."""
    weights = numpy_helper.from_array(
        scale * np.arange(16, dtype=np.float32).reshape(4, 4) / 10, "w"
    )
    bias = numpy_helper.from_array(np.ones(4, dtype=np.float32), "b")
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "w"], ["xw"]),
            helper.make_node("Add", ["xw", "b"], ["sum"]),
            helper.make_node("Relu", ["sum"], ["y"]),
        ],
        "tiny",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])],
        [weights, bias],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model.SerializeToString()


def _run(session: object) -> np.ndarray:
    (result,) = session.run(["y"], {"x": INPUT})  # type: ignore[attr-defined]
    return np.asarray(result)


def test_a_session_without_a_cache_runs_the_model() -> None:
    expected = np.maximum(INPUT @ (np.arange(16).reshape(4, 4) / 10) + 1, 0)
    np.testing.assert_allclose(_run(cpu_session(_model(1.0), 1)), expected, rtol=1e-6)


def test_the_optimized_graph_is_kept_and_the_next_session_is_made_from_it(tmp_path: Path) -> None:
    kept = tmp_path / "splits" / "tiny.stage.1t.onnx"
    plain = _run(cpu_session(_model(1.0), 1))
    np.testing.assert_array_equal(_run(cpu_session(_model(1.0), 1, kept)), plain)
    # No temporary left: the file, and the lock it was made under (split_cache.made_once).
    assert sorted(p.name for p in kept.parent.iterdir()) == [f".{kept.name}.lock", kept.name]
    onnx.checker.check_model(onnx.load(kept))
    np.testing.assert_array_equal(_run(cpu_session(_model(1.0), 1, kept)), plain)
    # Made from the kept file, not from the model handed over: another graph kept there is the
    # one that runs (the file's name is what stands for the model).
    kept.write_bytes(_model(2.0))
    np.testing.assert_array_equal(
        _run(cpu_session(_model(1.0), 1, kept)), _run(cpu_session(_model(2.0), 1))
    )


@pytest.mark.parametrize("damage", [b"", b"not a model", None])
def test_a_kept_graph_that_does_not_load_is_optimized_again(
    tmp_path: Path, damage: bytes | None, caplog: pytest.LogCaptureFixture
) -> None:
    kept = tmp_path / "tiny.stage.1t.onnx"
    plain = _run(cpu_session(_model(1.0), 1, kept))
    data = kept.read_bytes()
    kept.write_bytes(data[: len(data) // 2] if damage is None else damage)
    with caplog.at_level(logging.WARNING, logger=sessions.__name__):
        np.testing.assert_array_equal(_run(cpu_session(_model(1.0), 1, kept)), plain)
    assert "does not load" in caplog.text
    assert kept.read_bytes() == data  # written again, whole


def test_a_directory_that_cannot_be_written_costs_only_the_time(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocked = tmp_path / "a file"
    blocked.write_text("not a directory")
    with caplog.at_level(logging.WARNING, logger=sessions.__name__):
        session = cpu_session(_model(1.0), 1, blocked / "tiny.stage.1t.onnx")
    np.testing.assert_array_equal(_run(session), _run(cpu_session(_model(1.0), 1)))
    assert "cannot write" in caplog.text
    assert blocked.read_text() == "not a directory"


def test_a_graph_that_cannot_be_put_in_place_costs_only_the_time(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # The session is made, and its graph written beside the path, but the rename fails.
    kept = tmp_path / "tiny.stage.1t.onnx"
    (kept / "in the way").mkdir(parents=True)
    with caplog.at_level(logging.WARNING, logger=sessions.__name__):
        session = cpu_session(_model(1.0), 1, kept)
    np.testing.assert_array_equal(_run(session), _run(cpu_session(_model(1.0), 1)))
    assert "cannot write" in caplog.text
    assert sorted(p.name for p in tmp_path.iterdir()) == [kept.name]  # no temporary left
