"""Run a 1-D convolutional stage as 2-D convolutions, where ONNX Runtime's CPU kernels are faster.

ONNX Runtime lays 2-D convolutions out in blocks of channels (its NCHWc transform) and keeps that
layout through the element-wise operations between them; 1-D convolutions take a slower generic
path. The HiFi-GAN decoder is nothing but 1-D convolutions, transposed convolutions and
element-wise operations, so it can run on tensors of shape ``(N, C, 1, T)`` instead of
``(N, C, T)`` with kernels of height 1: the same arithmetic, 12 to 16% faster on the dev machine
(docs/benchmarks.md), equal to the 1-D graph within float rounding (the tests hold 1e-5).

Only a graph made of the operations listed in ``_ELEMENTWISE`` and 1-D (transposed) convolutions,
with one 3-D input and a final ``Unsqueeze`` that adds the height axis to its output, is
rewritten; anything else is returned unchanged, so an unusual voice still loads.
"""

from __future__ import annotations

import logging

import numpy as np
import onnx
from onnx import helper, numpy_helper

__all__ = ["as_conv2d"]

log = logging.getLogger(__name__)

_CONVS = frozenset({"Conv", "ConvTranspose"})
_ELEMENTWISE = frozenset({"Add", "Sub", "Mul", "Div", "LeakyRelu", "Relu", "Tanh", "Sigmoid"})
_HEIGHT_AXIS = "voxflow_height_axis"


def as_conv2d(model: onnx.ModelProto) -> onnx.ModelProto:
    """``model`` rewritten to run its 1-D convolutions as 2-D ones, or ``model`` itself when it
    is not a graph this rewrite knows to be safe (see the module docstring)."""
    graph = model.graph
    if len(graph.input) != 1 or len(graph.output) != 1 or not graph.node:
        return model
    final = graph.node[-1]
    if final.op_type != "Unsqueeze" or final.output[0] != graph.output[0].name:
        return model
    initializers = {init.name: init for init in graph.initializer}
    body = graph.node[:-1]
    convs = [node for node in body if node.op_type in _CONVS]
    if (
        not convs
        or any(node.op_type not in _CONVS | _ELEMENTWISE for node in body)
        or any(
            node.input[1] not in initializers or len(initializers[node.input[1]].dims) != 3
            for node in convs
        )
        or not _adds_height_axis(final, initializers, initializers[convs[-1].input[1]])
    ):
        log.info("stage %s is not a plain 1-D convolution graph; left as it is", graph.name)
        return model

    rewritten = onnx.ModelProto()
    rewritten.CopyFrom(model)
    graph = rewritten.graph
    source = graph.input[0].name
    lifted = f"{source}_2d"
    graph.initializer.append(numpy_helper.from_array(np.array([2], np.int64), _HEIGHT_AXIS))
    nodes = [helper.make_node("Unsqueeze", [source, _HEIGHT_AXIS], [lifted], name="/to_2d")]
    weights = {init.name: init for init in graph.initializer}
    lifted_weights: set[str] = set()
    for node in graph.node[:-1]:
        copy = onnx.NodeProto()
        copy.CopyFrom(node)
        copy.input[:] = [lifted if name == source else name for name in node.input]
        if node.op_type in _CONVS:
            weight = node.input[1]
            if weight not in lifted_weights:
                array = numpy_helper.to_array(weights[weight])
                weights[weight].CopyFrom(numpy_helper.from_array(array[:, :, np.newaxis], weight))
                lifted_weights.add(weight)
            del copy.attribute[:]
            copy.attribute.extend(_attributes_2d(node))
        nodes.append(copy)
    # The last element-wise result is already (N, C, 1, T): the Unsqueeze that made the 1-D
    # graph's output 4-D becomes a plain copy.
    nodes.append(helper.make_node("Identity", [final.input[0]], [final.output[0]], name="/out"))
    del graph.node[:]
    graph.node.extend(nodes)
    del graph.value_info[:]
    used = {name for node in nodes for name in node.input}
    kept = [init for init in graph.initializer if init.name in used]
    del graph.initializer[:]
    graph.initializer.extend(kept)
    return rewritten


def _adds_height_axis(
    node: onnx.NodeProto, initializers: dict[str, onnx.TensorProto], last_weight: onnx.TensorProto
) -> bool:
    """Whether the final ``Unsqueeze`` gives the same shape as the 2-D graph's last result,
    ``(N, C, 1, T)``: it inserts axis 2, or axis 1 in front of a single channel."""
    if len(node.input) < 2 or node.input[1] not in initializers:
        return False
    axes = numpy_helper.to_array(initializers[node.input[1]]).reshape(-1).tolist()
    single_channel = last_weight.dims[0] == 1
    return axes == [2] or (axes == [1] and single_channel)


def _attributes_2d(node: onnx.NodeProto) -> list[onnx.AttributeProto]:
    """A 1-D convolution's attributes for a kernel of height 1."""
    out = []
    for attribute in node.attribute:
        value = helper.get_attribute_value(attribute)
        name = attribute.name
        if name == "pads":
            value = [0, value[0], 0, value[1]]
        elif name in ("kernel_shape", "strides", "dilations"):
            value = [1, value[0]]
        elif name == "output_padding":
            value = [0, value[0]]
        elif name == "output_shape":
            value = [1, value[0]]
        out.append(helper.make_attribute(name, value))
    return out
