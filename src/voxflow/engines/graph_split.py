"""Split a Piper (VITS) ONNX graph into a text stage, a flow stage and a decoder stage, in memory.

A Piper voice ships as one graph: text encoder -> stochastic duration predictor -> expansion of
the phoneme-level prior to frames -> ``z_p = m_p + noise * exp(logs_p) * noise_scale`` -> flow
(reverse) -> HiFi-GAN decoder. Everything after ``z_p`` is convolutional along time, so it can run
on windows of frames (see ``voxflow.engines.piper``). We cut the graph in three:

* text stage: ``input``, ``input_lengths``, ``scales`` (+ ``sid``) and ``dp_noise`` (the duration
  predictor's Gaussian noise, made an input so a seed reproduces the output) -> ``m_p`` and
  ``logs_p`` at frame rate and the per-phoneme-id ``durations`` in frames.
* flow stage: ``z_p`` and ``y_mask`` (+ ``sid``) -> ``z``, the decoder's input.
* decoder stage: ``z`` (+ ``sid``) -> ``output`` audio, run as 2-D convolutions where the graph
  allows (``voxflow.engines.conv2d``: the same arithmetic, faster kernels).

The flow and the decoder are cut apart because their receptive fields differ: the flow needs ~24
frames of context on each side of a window but costs a sixth of the decoder per frame, while the
decoder needs only ~10. Windowing them separately keeps the wasted overlap small.

The prior noise for ``z_p`` is drawn by the caller, which is what lets a window reproduce exactly
the frames a whole-utterance run would see.

The cuts are found from the graph's structure (the two ``RandomNormalLike`` nodes, the ``Ceil`` of
the durations, the one text-dependent tensor besides ``z_p`` that the flow reads: the frame mask,
and the one ``z_p``-dependent tensor that the ``/dec/`` nodes read), so they hold for every voice
exported by Piper's training code. Anything else is rejected with a clear error.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import onnx
from onnx import TensorProto, helper

from voxflow.engines.conv2d import as_conv2d

TEXT_INPUTS = ("input", "input_lengths", "scales")
SPEAKER_INPUT = "sid"
DP_NOISE = "dp_noise"
M_P = "m_p"
LOGS_P = "logs_p"
DURATIONS = "durations"
Z_P = "z_p"
Y_MASK = "y_mask"
Z = "z"
AUDIO = "output"


class GraphSplitError(ValueError):
    """The model is not a VITS graph of the shape Piper exports."""


@dataclass(frozen=True)
class SplitModel:
    """The two stages as serialized ONNX models, ready for ``onnxruntime.InferenceSession``."""

    text_stage: bytes
    flow_stage: bytes
    decoder_stage: bytes
    latent_channels: int
    has_speaker_input: bool


def split_piper_model(model: onnx.ModelProto, conv2d: bool = True) -> SplitModel:
    """Cut ``model`` into its three stages (see the module docstring); ``conv2d=False`` keeps the
    decoder's 1-D convolutions as exported."""
    graph = model.graph
    nodes = list(graph.node)
    producer = {out: node for node in nodes for out in node.output}
    consumers: dict[str, list[onnx.NodeProto]] = {}
    for node in nodes:
        for name in node.input:
            consumers.setdefault(name, []).append(node)

    randoms = [n for n in nodes if n.op_type == "RandomNormalLike"]
    dp_randoms = [n for n in randoms if "/dp/" in n.name]
    prior_randoms = [n for n in randoms if "/dp/" not in n.name]
    if len(dp_randoms) != 1 or len(prior_randoms) != 1:
        raise GraphSplitError(
            f"expected one duration-predictor and one prior RandomNormalLike node, found "
            f"{[n.name for n in randoms]}"
        )
    dp_noise_tensor = dp_randoms[0].output[0]
    m_p, logs_p, z_p = _find_prior(prior_randoms[0], producer, consumers)

    ceils = [n for n in nodes if n.op_type == "Ceil"]
    if len(ceils) != 1:
        raise GraphSplitError(f"expected one Ceil (durations) node, found {len(ceils)}")
    durations = ceils[0].output[0]

    graph_inputs = {i.name for i in graph.input}
    missing = [name for name in TEXT_INPUTS if name not in graph_inputs]
    if missing or AUDIO not in {o.name for o in graph.output}:
        raise GraphSplitError(f"model lacks Piper's inputs/outputs (missing {missing})")
    has_sid = SPEAKER_INPUT in graph_inputs

    y_mask, decoder_input = _find_frame_mask_and_decoder_input(nodes, z_p, graph_inputs, producer)
    channels = _latent_channels(model, m_p)

    renames_text = {dp_noise_tensor: DP_NOISE, m_p: M_P, logs_p: LOGS_P, durations: DURATIONS}
    text_inputs = [*TEXT_INPUTS, *([SPEAKER_INPUT] if has_sid else []), dp_noise_tensor]
    text_stage = _extract(
        model,
        inputs=text_inputs,
        outputs=[m_p, logs_p, durations],
        renames=renames_text,
        new_inputs={dp_noise_tensor: (TensorProto.FLOAT, [1, 2, "phonemes"])},
        new_outputs={
            m_p: (TensorProto.FLOAT, [1, channels, "frames"]),
            logs_p: (TensorProto.FLOAT, [1, channels, "frames"]),
            durations: (TensorProto.FLOAT, [1, 1, "phonemes"]),
        },
    )
    speaker = [SPEAKER_INPUT] if has_sid else []
    flow_stage = _extract(
        model,
        inputs=[z_p, y_mask, *speaker],
        outputs=[decoder_input],
        renames={z_p: Z_P, y_mask: Y_MASK, decoder_input: Z},
        new_inputs={
            z_p: (TensorProto.FLOAT, [1, channels, "frames"]),
            y_mask: (TensorProto.FLOAT, [1, 1, "frames"]),
        },
        new_outputs={decoder_input: (TensorProto.FLOAT, [1, channels, "frames"])},
    )
    decoder_stage = _extract(
        model,
        inputs=[decoder_input, *speaker],
        outputs=[AUDIO],
        renames={decoder_input: Z},
        new_inputs={decoder_input: (TensorProto.FLOAT, [1, channels, "frames"])},
        new_outputs={},
    )
    return SplitModel(
        text_stage=text_stage.SerializeToString(),
        flow_stage=flow_stage.SerializeToString(),
        decoder_stage=(as_conv2d(decoder_stage) if conv2d else decoder_stage).SerializeToString(),
        latent_channels=channels,
        has_speaker_input=has_sid,
    )


def _find_prior(
    random: onnx.NodeProto,
    producer: dict[str, onnx.NodeProto],
    consumers: dict[str, list[onnx.NodeProto]],
) -> tuple[str, str, str]:
    """Follow ``noise * exp(logs_p) * noise_scale + m_p`` from the prior's noise node."""
    m_p = random.input[0]  # RandomNormalLike takes its shape from m_p.
    tensor = random.output[0]
    logs_p: str | None = None
    for _ in range(4):
        users = consumers.get(tensor, [])
        if len(users) != 1:
            break
        user = users[0]
        others = [name for name in user.input if name != tensor]
        if user.op_type == "Mul" and others:
            source = producer.get(others[0])
            if source is not None and source.op_type == "Exp":
                logs_p = source.input[0]
        elif user.op_type == "Add" and others == [m_p]:
            if logs_p is None:
                break
            return m_p, logs_p, user.output[0]
        tensor = user.output[0]
    raise GraphSplitError("could not trace z_p = m_p + noise * exp(logs_p) * scale in the graph")


def _find_frame_mask_and_decoder_input(
    nodes: Sequence[onnx.NodeProto],
    z_p: str,
    graph_inputs: set[str],
    producer: dict[str, onnx.NodeProto],
) -> tuple[str, str]:
    """The frame mask (the one text-derived tensor besides ``z_p`` that the flow and decoder read)
    and the decoder's input (the one ``z_p``-derived tensor that ``/dec/`` nodes read)."""
    from_text: set[str] = set(TEXT_INPUTS) & graph_inputs
    from_zp: set[str] = {z_p}
    for node in nodes:  # ONNX requires topological order
        if any(name in from_zp for name in node.input):
            from_zp.update(node.output)
        elif any(name in from_text for name in node.input):
            from_text.update(node.output)
    mask_candidates = {
        name
        for node in nodes
        if any(name in from_zp for name in node.input)
        for name in node.input
        if name in from_text and name != z_p
    }
    if len(mask_candidates) != 1:
        raise GraphSplitError(
            f"expected one frame mask feeding the flow, found {sorted(mask_candidates)}"
        )
    mask: str = mask_candidates.pop()
    if mask not in producer:
        raise GraphSplitError(f"frame mask {mask!r} is not produced by a node")
    decoder_inputs = {
        name
        for node in nodes
        if node.name.startswith("/dec/")
        for name in node.input
        if name in from_zp and name in producer and not producer[name].name.startswith("/dec/")
    }
    if len(decoder_inputs) != 1:
        raise GraphSplitError(
            f"expected one tensor from the flow into the decoder, found {sorted(decoder_inputs)}"
        )
    return mask, decoder_inputs.pop()


def _latent_channels(model: onnx.ModelProto, m_p: str) -> int:
    """Latent channels of the prior, from the flow's first convolution weights."""
    inits = {init.name: init for init in model.graph.initializer}
    for node in model.graph.node:
        if node.op_type == "Conv" and "/flow/" in node.name and len(node.input) > 1:
            weight = inits.get(node.input[1])
            if weight is not None:
                # The first coupling layer's `pre` conv reads half of the channels.
                return int(weight.dims[1]) * 2
    raise GraphSplitError(f"could not determine the latent channels of {m_p!r}")


def _extract(
    model: onnx.ModelProto,
    inputs: Iterable[str],
    outputs: Sequence[str],
    renames: dict[str, str],
    new_inputs: dict[str, tuple[int, list[int | str]]],
    new_outputs: dict[str, tuple[int, list[int | str]]],
) -> onnx.ModelProto:
    """The sub-graph computing ``outputs`` from ``inputs``, with boundary tensors renamed."""
    graph = model.graph
    input_set = set(inputs)
    producer = {out: node for node in graph.node for out in node.output}
    initializers = {init.name: init for init in graph.initializer}
    needed_nodes: set[int] = set()
    needed_inits: set[str] = set()
    stack = list(outputs)
    seen: set[str] = set()
    node_index = {id(node): i for i, node in enumerate(graph.node)}
    while stack:
        name = stack.pop()
        if name in seen or not name or name in input_set:
            continue
        seen.add(name)
        if name in initializers:
            needed_inits.add(name)
            continue
        node = producer.get(name)
        if node is None:
            raise GraphSplitError(f"tensor {name!r} is neither produced nor a stage input")
        needed_nodes.add(node_index[id(node)])
        stack.extend(node.input)

    def rename(name: str) -> str:
        return renames.get(name, name)

    new_nodes = []
    for i, node in enumerate(graph.node):
        if i not in needed_nodes:
            continue
        copy = onnx.NodeProto()
        copy.CopyFrom(node)
        copy.input[:] = [rename(n) for n in node.input]
        copy.output[:] = [rename(n) for n in node.output]
        new_nodes.append(copy)

    original_inputs = {vi.name: vi for vi in graph.input}
    graph_inputs = []
    for name in inputs:
        if name in new_inputs:
            elem, shape = new_inputs[name]
            graph_inputs.append(helper.make_tensor_value_info(rename(name), elem, shape))
        else:
            graph_inputs.append(original_inputs[name])
    original_outputs = {vi.name: vi for vi in graph.output}
    graph_outputs = []
    for name in outputs:
        if name in new_outputs:
            elem, shape = new_outputs[name]
            graph_outputs.append(helper.make_tensor_value_info(rename(name), elem, shape))
        else:
            graph_outputs.append(original_outputs[name])

    sub_graph = helper.make_graph(
        new_nodes,
        graph.name,
        graph_inputs,
        graph_outputs,
        initializer=[initializers[name] for name in sorted(needed_inits)],
    )
    sub_model = helper.make_model(sub_graph, opset_imports=list(model.opset_import))
    sub_model.ir_version = model.ir_version
    return sub_model
