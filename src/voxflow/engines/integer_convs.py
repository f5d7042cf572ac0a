"""Run a dynamically quantized model's 1-D ``ConvInteger`` nodes as ``MatMulInteger`` products:
the same integers, on ONNX Runtime's faster integer kernels.

ONNX Runtime's quantizer writes a convolution's weights as uint8 around a zero point (Kokoro's
int8 export: 87 convolutions, 68% of its decoder's time), and its ``ConvInteger`` is slow.
Each convolution becomes:

* its quantized input ``[N, C, T]`` transposed to ``[N, T, C]`` and padded in time with the
  input's zero point (what ``ConvInteger`` pads with);
* for a kernel of ``K`` taps with dilation ``d``, the ``K`` shifted views of it side by side,
  ``[N, T_out, K * C]`` (im2col: tap ``j`` reads rows ``j * d`` onward);
* one ``MatMulInteger`` by the weights as a ``[K * C, C_out]`` matrix;
* transposed back to ``[N, C_out, T_out]``.

The weights of the product are signed or not, by what the CPU sums exactly:

* **int8** (``signed_weights``): each moved from ``[0, 255]`` to ``[-128, 127]``, its zero
  point with it (``w - z`` is unchanged). On x86 with VNNI, uint8 by int8 is one instruction
  (``vpdpbusd``, summed in int32), and the product runs at three times ``ConvInteger``'s rate
  (docs/kokoro.md, *Where the time goes*); on ARM it is exact too. But AVX2's ``vpmaddubsw``,
  ONNX Runtime's kernel on an x86 CPU without VNNI, adds each pair of products into int16 with
  saturation (255 x 127 twice is 64,770, past 32,767), as its quantization guide warns: there
  the convolutions come out different, and Kokoro's audio moved 3 dB (log-mel) from the stock
  model's. ``signed_products_exact`` asks the CPU.
* **uint8**, the export's own: uint8 by uint8 is widened to int16 and summed in int32 on every
  CPU, exact everywhere; on an AVX2 CPU without VNNI the product still runs a little faster
  than ``ConvInteger`` (docs/kokoro.md, *On an x86 CPU without VNNI*).

**Invariant**: the rewritten nodes compute the same int32 tensor as the ``ConvInteger`` they
replace, element for element (integer sums, in any order, are exact, on a kernel that does not
saturate), so the model's output is bit for bit the original's. Only a ``ConvInteger`` with a
3-D uint8 weight initializer, a single weight zero point, one group, stride 1 and explicit
padding is rewritten; any other node is left as it is.
"""

from __future__ import annotations

import logging

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

__all__ = ["product_convs", "signed_products_exact"]

log = logging.getLogger(__name__)

_SHIFT = 128  # uint8 -> int8: w - 128, and its zero point with it
_TO_ROWS = [0, 2, 1]  # [N, C, T] <-> [N, T, C]


def product_convs(model: onnx.ModelProto, signed_weights: bool) -> int:
    """Rewrite ``model``'s eligible ``ConvInteger`` nodes in place, as products with int8
    weights if ``signed_weights``, else with their own uint8 ones (module docstring); returns
    how many were rewritten."""
    graph = model.graph
    initializers = {init.name: init for init in graph.initializer}
    rewritten: list[onnx.NodeProto] = []
    added: list[TensorProto] = []
    count = 0
    for node in graph.node:
        replacement = _as_matmul(node, initializers, signed_weights)
        if replacement is None:
            rewritten.append(node)
            continue
        nodes, weights = replacement
        rewritten.extend(nodes)
        added.extend(weights)
        count += 1
    if count == 0:
        return 0
    del graph.node[:]
    graph.node.extend(rewritten)
    graph.initializer.extend(added)
    read = {name for node in graph.node for name in node.input}
    kept = [init for init in graph.initializer if init.name in read]
    del graph.initializer[:]
    graph.initializer.extend(kept)
    log.debug(
        "%d integer convolutions run as products with %s weights",
        count,
        "int8" if signed_weights else "uint8",
    )
    return count


def signed_products_exact() -> bool:
    """Whether ONNX Runtime's ``MatMulInteger`` of uint8 by int8, zero points as the rewrite
    gives them, sums exactly on this CPU (module docstring). It runs the products a saturating
    kernel gets wrong (a pair of 255 x 127, of 255 x -128) and random ones, as a vector and as
    a matrix (ONNX Runtime has a kernel for each), against numpy's exact sums."""
    depth, columns = 64, 32
    rng = np.random.default_rng(0)
    weights = rng.integers(-128, 128, (depth, columns), dtype=np.int8)
    weights[:, 0], weights[:, 1] = 127, -128
    weight_zero = np.array(-3, dtype=np.int8)
    node = helper.make_node("MatMulInteger", ["a", "b", "a_zero", "b_zero"], ["y"])
    graph = helper.make_graph(
        [node],
        "signed_products",
        [
            helper.make_tensor_value_info("a", TensorProto.UINT8, ["rows", depth]),
            helper.make_tensor_value_info("a_zero", TensorProto.UINT8, []),
        ],
        [helper.make_tensor_value_info("y", TensorProto.INT32, ["rows", columns])],
        [numpy_helper.from_array(weights, "b"), numpy_helper.from_array(weight_zero, "b_zero")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    for rows in (1, 16):
        a = rng.integers(0, 256, (rows, depth), dtype=np.uint8)
        a[0] = 255
        a_zero = np.array(97, dtype=np.uint8)
        (got,) = session.run(None, {"a": a, "a_zero": a_zero})
        exact = (a.astype(np.int64) - int(a_zero)) @ (weights.astype(np.int64) - int(weight_zero))
        if not np.array_equal(np.asarray(got), exact):
            return False
    return True


def _as_matmul(
    node: onnx.NodeProto, initializers: dict[str, TensorProto], signed_weights: bool
) -> tuple[list[onnx.NodeProto], list[TensorProto]] | None:
    if node.op_type != "ConvInteger" or node.domain not in ("", "ai.onnx"):
        return None
    inputs = list(node.input) + [""] * (4 - len(node.input))
    x, w_name, x_zero, w_zero = inputs
    weight = initializers.get(w_name)
    w_zero_init = initializers.get(w_zero) if w_zero else None
    if weight is None or weight.data_type != TensorProto.UINT8 or len(weight.dims) != 3:
        return None
    if w_zero and (w_zero_init is None or w_zero_init.data_type != TensorProto.UINT8):
        return None
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    out_channels, channels, taps = (int(d) for d in weight.dims)
    dilations = [int(d) for d in attrs.get("dilations", [1])]
    pads = [int(p) for p in attrs.get("pads", [0, 0])]
    auto_pad = attrs.get("auto_pad", b"NOTSET")
    if (
        int(attrs.get("group", 1)) != 1
        or list(attrs.get("strides", [1])) != [1]
        or auto_pad not in (b"NOTSET", "NOTSET")
        or len(pads) != 2
        or list(attrs.get("kernel_shape", [taps])) != [taps]
        or len(dilations) != 1
    ):
        return None
    dilation = dilations[0]
    zero = (
        numpy_helper.to_array(w_zero_init)
        if w_zero_init is not None
        else np.zeros((), dtype=np.uint8)
    )
    if zero.size != 1:
        return None  # per-channel: ONNX Runtime's ConvInteger refuses it, so no model has one

    p = f"{node.name or node.output[0]}/{'int8' if signed_weights else 'uint8'}_weights/"
    shift, kind = (_SHIFT, np.int8) if signed_weights else (0, np.uint8)
    w = numpy_helper.to_array(weight).astype(np.int16) - shift  # [C_out, C, K]
    matrix = np.ascontiguousarray(w.transpose(2, 1, 0).reshape(taps * channels, out_channels))
    weights = [
        numpy_helper.from_array(matrix.astype(kind), p + "w"),
        numpy_helper.from_array((zero.astype(np.int16) - shift).astype(kind), p + "w_zero"),
    ]
    nodes = [helper.make_node("Transpose", [x], [p + "rows"], name=p + "rows", perm=_TO_ROWS)]
    rows = p + "rows"
    if pads != [0, 0]:
        weights.append(_int64s([0, pads[0], 0, 0, pads[1], 0], p + "pads"))
        pad_inputs = [rows, p + "pads"] + ([x_zero] if x_zero else [])
        nodes.append(helper.make_node("Pad", pad_inputs, [p + "padded"], name=p + "pad"))
        rows = p + "padded"
    if taps > 1:
        # Tap j reads the padded rows from j * d to the end less the reach of the taps after it.
        span = dilation * (taps - 1)
        weights.append(_int64s([1], p + "axis"))
        views = []
        for j in range(taps):
            start, end = j * dilation, j * dilation - span
            weights.append(_int64s([start], p + f"start{j}"))
            weights.append(_int64s([end if end < 0 else np.iinfo(np.int64).max], p + f"end{j}"))
            views.append(p + f"tap{j}")
            nodes.append(
                helper.make_node(
                    "Slice",
                    [rows, p + f"start{j}", p + f"end{j}", p + "axis"],
                    [views[-1]],
                    name=p + f"tap{j}",
                )
            )
        nodes.append(helper.make_node("Concat", views, [p + "im2col"], name=p + "im2col", axis=2))
        rows = p + "im2col"
    product = [rows, p + "w", x_zero, p + "w_zero"]
    nodes.append(helper.make_node("MatMulInteger", product, [p + "product"], name=p + "product"))
    nodes.append(
        helper.make_node(
            "Transpose", [p + "product"], [node.output[0]], name=p + "columns", perm=_TO_ROWS
        )
    )
    return nodes, weights


def _int64s(values: list[int], name: str) -> TensorProto:
    """An int64 initializer: the pads, axes and bounds ``Pad`` and ``Slice`` read."""
    return numpy_helper.from_array(np.array(values, dtype=np.int64), name)
