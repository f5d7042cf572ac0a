"""Run a dynamically quantized model's 1-D ``ConvInteger`` nodes as ``MatMulInteger`` products
with signed weights: the same integers, on ONNX Runtime's fastest integer kernel.

ONNX Runtime's quantizer writes a convolution's weights as uint8 around a zero point (Kokoro's
int8 export: 87 convolutions, 68% of its decoder's time). On x86 its integer kernels multiply
uint8 activations by int8 weights with one instruction (VNNI's ``vpdpbusd``, or AVX2's
``vpmaddubsw``); uint8 weights take a slower path, and ``ConvInteger`` runs at a third of the
rate a ``MatMulInteger`` with int8 weights reaches on this CPU (docs/kokoro.md, *Where the time
goes*). So each convolution becomes:

* its quantized input ``[N, C, T]`` transposed to ``[N, T, C]`` and padded in time with the
  input's zero point (what ``ConvInteger`` pads with);
* for a kernel of ``K`` taps with dilation ``d``, the ``K`` shifted views of it side by side,
  ``[N, T_out, K * C]`` (im2col: tap ``j`` reads rows ``j * d`` onward);
* one ``MatMulInteger`` by the weights as a ``[K * C, C_out]`` matrix, each moved from
  ``[0, 255]`` to ``[-128, 127]`` with its zero point moved with it (``w - z`` is unchanged);
* transposed back to ``[N, C_out, T_out]``.

**Invariant**: the rewritten nodes compute the same int32 tensor as the ``ConvInteger`` they
replace, element for element (integer sums, in any order, are exact), so the model's output is
bit for bit the original's. Only a ``ConvInteger`` with a 3-D uint8 weight initializer, a
single weight zero point, one group, stride 1 and explicit padding is rewritten;
any other node is left as it is.
"""

from __future__ import annotations

import logging

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

__all__ = ["signed_weight_convs"]

log = logging.getLogger(__name__)

_SHIFT = 128  # uint8 -> int8: w - 128, and its zero point with it
_TO_ROWS = [0, 2, 1]  # [N, C, T] <-> [N, T, C]


def signed_weight_convs(model: onnx.ModelProto) -> int:
    """Rewrite ``model``'s eligible ``ConvInteger`` nodes in place (module docstring); returns
    how many were rewritten."""
    graph = model.graph
    initializers = {init.name: init for init in graph.initializer}
    rewritten: list[onnx.NodeProto] = []
    added: list[TensorProto] = []
    count = 0
    for node in graph.node:
        replacement = _as_matmul(node, initializers)
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
    log.debug("%d integer convolutions run as products with int8 weights", count)
    return count


def _as_matmul(
    node: onnx.NodeProto, initializers: dict[str, TensorProto]
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

    p = f"{node.name or node.output[0]}/int8_weights/"
    w = numpy_helper.to_array(weight).astype(np.int16) - _SHIFT  # [C_out, C, K]
    matrix = np.ascontiguousarray(w.transpose(2, 1, 0).reshape(taps * channels, out_channels))
    weights = [
        numpy_helper.from_array(matrix.astype(np.int8), p + "w"),
        numpy_helper.from_array((zero.astype(np.int16) - _SHIFT).astype(np.int8), p + "w_zero"),
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
