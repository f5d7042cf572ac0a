"""Tests for voxflow.engines.integer_convs: each rewritten ``ConvInteger`` computes the very
integers it did, for every kernel, dilation, padding and zero point a 1-D convolution can have,
and a node the rewrite does not know is left as it was. (ONNX Runtime runs a ``ConvInteger`` with
one weight zero point only, so that is all the stock node can be compared on.)

Both rewrites (int8 and uint8 weights) are checked with onnx's reference evaluator (exact on
every machine) against ONNX Runtime's stock node, and with ONNX Runtime itself: the uint8 one
everywhere, the int8 one where ``signed_products_exact`` says its uint8-by-int8 product is exact
on this CPU; whether it is (x86 with VNNI, ARM) or not (AVX2 alone) is the probe's test."""

from __future__ import annotations

import itertools

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from voxflow.engines.integer_convs import product_convs, signed_products_exact

IN, OUT = 5, 3


def _conv_model(
    taps: int,
    dilation: int = 1,
    pads: tuple[int, int] = (0, 0),
    weight_zero: np.ndarray | None = None,
    input_zero: bool = True,
) -> onnx.ModelProto:
    rng = np.random.default_rng(taps * 100 + dilation * 10 + sum(pads))
    weights = rng.integers(0, 256, (OUT, IN, taps), dtype=np.uint8)
    initializers = [numpy_helper.from_array(weights, "w")]
    inputs = ["x", "w", "xz" if input_zero else "", "wz" if weight_zero is not None else ""]
    if weight_zero is not None:
        initializers.append(numpy_helper.from_array(weight_zero, "wz"))
    graph_inputs = [helper.make_tensor_value_info("x", TensorProto.UINT8, ["n", IN, "t"])]
    if input_zero:
        graph_inputs.append(helper.make_tensor_value_info("xz", TensorProto.UINT8, []))
    node = helper.make_node(
        "ConvInteger",
        [name for name in inputs],
        ["y"],
        name="conv",
        kernel_shape=[taps],
        dilations=[dilation],
        pads=list(pads),
    )
    while node.input and not node.input[-1]:
        node.input.pop()
    graph = helper.make_graph(
        [node],
        "conv",
        graph_inputs,
        [helper.make_tensor_value_info("y", TensorProto.INT32, ["n", OUT, "frames_out"])],
        initializers,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _run(model: onnx.ModelProto, x: np.ndarray, zero: int) -> np.ndarray:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    feeds = {"x": x}
    if any(i.name == "xz" for i in session.get_inputs()):
        feeds["xz"] = np.array(zero, dtype=np.uint8)
    (y,) = session.run(None, feeds)
    return np.asarray(y)


def _reference(model: onnx.ModelProto, x: np.ndarray, zero: int) -> np.ndarray:
    """``model`` run by onnx's reference evaluator: exact integer sums whatever the CPU."""
    evaluator = ReferenceEvaluator(model)
    feeds = {"x": x}
    if any(i.name == "xz" for i in model.graph.input):
        feeds["xz"] = np.array(zero, dtype=np.uint8)
    (y,) = evaluator.run(None, feeds)
    return np.asarray(y)


@pytest.fixture(scope="module")
def exact_here() -> bool:
    return signed_products_exact()


@pytest.fixture(params=[True, False], ids=["int8 weights", "uint8 weights"])
def signed(request: pytest.FixtureRequest) -> bool:
    return bool(request.param)


def _same_integers(
    model: onnx.ModelProto, rewritten: onnx.ModelProto, x: np.ndarray, zero: int, exact: bool
) -> None:
    """``rewritten`` computes ``model``'s integers: by the reference evaluator, and by ONNX
    Runtime if ``exact`` (its kernel for the rewrite's product sums exactly here)."""
    expected = _run(model, x, zero)
    got = _reference(rewritten, x, zero)
    assert got.dtype == np.int32 and got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)
    if exact:
        np.testing.assert_array_equal(_run(rewritten, x, zero), expected)


def _rewritten(model: onnx.ModelProto, signed: bool) -> onnx.ModelProto:
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    assert product_convs(copy, signed) == 1
    onnx.checker.check_model(copy)
    return copy


_ZEROS = {
    "scalar": np.array(131, dtype=np.uint8),
    "one-element vector": np.array([7], dtype=np.uint8),
    "absent": None,
}


@pytest.mark.parametrize(
    ("taps", "dilation", "pads", "zero"),
    [
        (taps, dilation, pads, zero)
        for taps, dilation in [(1, 1), (3, 1), (3, 3), (5, 1), (7, 3), (11, 5)]
        for pads, zero in zip(
            [(dilation * (taps - 1) // 2,) * 2, (0, 0), (taps - 1, 0)], _ZEROS, strict=True
        )
    ],
)
def test_a_rewritten_convolution_gives_the_same_integers(
    taps: int, dilation: int, pads: tuple[int, int], zero: str, signed: bool, exact_here: bool
) -> None:
    model = _conv_model(taps, dilation, pads, _ZEROS[zero])
    rewritten = _rewritten(model, signed)
    assert "ConvInteger" not in {n.op_type for n in rewritten.graph.node}
    weights = [i for i in rewritten.graph.initializer if i.name.endswith("/w")]
    assert [w.data_type for w in weights] == [TensorProto.INT8 if signed else TensorProto.UINT8]
    rng = np.random.default_rng(7)
    reach = dilation * (taps - 1) - sum(pads)
    for batch, frames in itertools.product((1, 2), (reach + 1, reach + 40, reach + 301)):
        x = rng.integers(0, 256, (batch, IN, frames), dtype=np.uint8)
        for input_zero in (0, 97, 255):
            _same_integers(model, rewritten, x, input_zero, exact_here or not signed)


def test_a_missing_input_zero_point_pads_with_zero(signed: bool, exact_here: bool) -> None:
    model = _conv_model(5, 2, (4, 4), _ZEROS["scalar"], input_zero=False)
    rewritten = _rewritten(model, signed)
    x = np.random.default_rng(3).integers(0, 256, (1, IN, 33), dtype=np.uint8)
    _same_integers(model, rewritten, x, 0, exact_here or not signed)


def test_the_probe_says_whether_this_cpu_runs_the_int8_rewrite_exactly(exact_here: bool) -> None:
    # The largest products, side by side: a kernel that sums pairs into int16 saturates on
    # them (255 x 127 twice), one that sums in int32 does not. The uint8 rewrite is exact on
    # both.
    model = _conv_model(7, 1, (3, 3))
    weights = np.full((OUT, IN, 7), 255, dtype=np.uint8)
    model.graph.initializer[0].CopyFrom(numpy_helper.from_array(weights, "w"))
    x = np.full((1, IN, 64), 255, dtype=np.uint8)
    expected = _run(model, x, 0)
    signed = _rewritten(model, True)
    np.testing.assert_array_equal(_reference(signed, x, 0), expected)
    assert np.array_equal(_run(signed, x, 0), expected) == exact_here
    np.testing.assert_array_equal(_run(_rewritten(model, False), x, 0), expected)


def test_the_uint8_weights_are_dropped_and_a_shared_zero_point_kept() -> None:
    model = _conv_model(3, 1, (1, 1), _ZEROS["scalar"])
    # A second reader of the weight zero point that the rewrite does not replace.
    model.graph.node.append(helper.make_node("Identity", ["wz"], ["wz_copy"]))
    model.graph.output.append(helper.make_tensor_value_info("wz_copy", TensorProto.UINT8, []))
    rewritten = _rewritten(model, True)
    names = {init.name for init in rewritten.graph.initializer}
    assert "w" not in names and "wz" in names


@pytest.mark.parametrize(
    ("dropped", "attribute"),
    [
        ("strides", helper.make_attribute("strides", [2])),
        ("pads", helper.make_attribute("auto_pad", "SAME_UPPER")),
        ("dilations", helper.make_attribute("dilations", [1, 1])),
    ],
    ids=["strided", "auto padded", "2-D"],
)
def test_a_convolution_the_rewrite_does_not_know_is_left_alone(
    dropped: str, attribute: onnx.AttributeProto
) -> None:
    model = _conv_model(3, weight_zero=_ZEROS["scalar"])
    node = model.graph.node[0]
    kept = [a for a in node.attribute if a.name != dropped]
    del node.attribute[:]
    node.attribute.extend([*kept, attribute])
    before = model.SerializeToString()
    assert product_convs(model, True) == 0
    assert model.SerializeToString() == before


def test_signed_or_computed_weights_are_left_alone() -> None:
    signed = _conv_model(3, weight_zero=_ZEROS["scalar"])
    weights = numpy_helper.to_array(signed.graph.initializer[0]).astype(np.int16) - 128
    signed.graph.initializer[0].CopyFrom(numpy_helper.from_array(weights.astype(np.int8), "w"))
    zero = np.array(3, dtype=np.int8)
    signed.graph.initializer[1].CopyFrom(numpy_helper.from_array(zero, "wz"))
    assert product_convs(signed, True) == 0

    computed = _conv_model(3, weight_zero=_ZEROS["scalar"])
    weight = computed.graph.initializer[0]
    computed.graph.input.append(helper.make_tensor_value_info("w", TensorProto.UINT8, weight.dims))
    del computed.graph.initializer[0]
    assert product_convs(computed, False) == 0
