"""Split the Kokoro-82M ONNX graph into a prosody stage and a streamable decoder, in memory.

Kokoro (StyleTTS 2 with an iSTFTNet vocoder) ships as one graph: ALBERT text encoder, duration
predictor, the alignment of phonemes to frames, the F0 and energy predictors, then the decoder
(frame-rate blocks, then the generator: harmonic source, two upsampling stages with residual
blocks, inverse STFT). We cut it where the decoder starts:

* **prosody stage**: ``tokens``, ``style``, ``speed`` -> ``asr`` (the aligned text features,
  ``[1, 512, frames]``), ``f0`` and ``energy`` (``[1, 2 * frames]``: the decoder reads them at
  twice the alignment's rate) and ``durations`` per token. It runs once per segment on the
  whole text, so its attention, recurrent layers and normalisations see all of it; it is a few
  per cent of the work.
* **decoder**: ``asr``, ``f0``, ``energy`` of a window, ``style`` and ``sines`` (below) ->
  ``audio`` (600 samples per alignment frame at 24 kHz). This is what streams.

Two things in the decoder depend on the whole utterance, not on a neighbourhood of the window,
so context frames alone cannot make a window equal a whole run:

1. **The harmonic source's phase** is a running sum of the F0 curve from the first frame. The
   stage takes the sines (``[1, samples, 9]``, one per harmonic) as an input instead; the engine
   computes them from the utterance's whole F0 curve, so every window sees the same phase a
   whole run does.
2. **Instance normalisation.** Each of the decoder's AdaIN layers (54) normalises every channel
   by its mean and variance over the whole utterance. A window cannot know those. Each layer is
   rewritten to normalise by a blend: ``prior_weight`` times a prior (``norm{i}_prior_mean``,
   ``norm{i}_prior_meansq``: the mean and mean square the engine carries) plus the rest times
   the window's own statistics, and the stage returns the window's own statistics
   (``norm{i}_mean``, ``norm{i}_meansq``) so the engine can fold them into its running figures.
   With ``prior_weight`` 0 every layer does exactly Kokoro's arithmetic; the engine's running
   blend is what makes streaming possible, at a stated distance from the whole run
   (docs/benchmarks.md, Kokoro).

The cuts are found from the graph's structure (the one ``Round`` of the durations, the three
tensors the ``/decoder/`` nodes read from the ``/encoder/`` ones, the one ``Sin`` of the harmonic
source, the normalisation pattern ``x - mean(x)``, ``mean((x - mean)^2)``), and anything else is
refused with a clear error.

Both stages' integer convolutions then run as products (``voxflow.engines.integer_convs``),
with int8 weights where this CPU sums uint8 by int8 exactly (the caller asks
``integer_convs.signed_products_exact``), else with uint8 ones: the same integers on ONNX
Runtime's faster kernels, a third less of the decoder's time with int8 weights.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from voxflow.engines.graph_split import GraphSplitError, _extract
from voxflow.engines.integer_convs import product_convs

PROSODY_INPUTS = ("tokens", "style", "speed")
ASR = "asr"
F0 = "f0"
ENERGY = "energy"
DURATIONS = "durations"
SINES = "sines"
AUDIO = "audio"
PRIOR_WEIGHT = "prior_weight"
HARMONICS = 9
_GENERATOR = "/generator/"


def prior_mean(i: int) -> str:
    return f"norm{i}_prior_mean"


def prior_meansq(i: int) -> str:
    return f"norm{i}_prior_meansq"


def window_mean(i: int) -> str:
    return f"norm{i}_mean"


def window_meansq(i: int) -> str:
    return f"norm{i}_meansq"


@dataclass(frozen=True)
class KokoroSplit:
    """The two stages as serialized ONNX models, and the decoder's normalisation layers."""

    prosody_stage: bytes
    decoder_stage: bytes
    norm_layers: int  # the decoder's normalisation layers (``norm0_`` ... inputs and outputs)


def split_kokoro_model(model: onnx.ModelProto, signed_weights: bool) -> KokoroSplit:
    """Cut ``model`` into its prosody stage and its streamable decoder, with their integer
    convolutions as products, on int8 weights if ``signed_weights`` (module docstring)."""
    graph = model.graph
    nodes = list(graph.node)
    producer = {out: node for node in nodes for out in node.output}
    if {i.name for i in graph.input} != set(PROSODY_INPUTS):
        raise GraphSplitError(f"expected Kokoro's inputs {PROSODY_INPUTS}")

    rounds = [n for n in nodes if n.op_type == "Round"]
    if len(rounds) != 1:
        raise GraphSplitError(f"expected one Round (durations) node, found {len(rounds)}")
    clips = [n for n in nodes if n.op_type == "Clip" and n.input[0] == rounds[0].output[0]]
    if len(clips) != 1:
        raise GraphSplitError("the durations' Round is not followed by one Clip")
    durations = clips[0].output[0]

    asr, f0, energy = _decoder_inputs(nodes, producer)
    sines = _harmonic_sines(nodes)

    prosody = _extract(
        model,
        inputs=PROSODY_INPUTS,
        outputs=[asr, f0, energy, durations],
        renames={asr: ASR, f0: F0, energy: ENERGY, durations: DURATIONS},
        new_inputs={},
        new_outputs={
            asr: (TensorProto.FLOAT, [1, "channels", "frames"]),
            f0: (TensorProto.FLOAT, [1, "rate2_frames"]),
            energy: (TensorProto.FLOAT, [1, "rate2_frames"]),
            durations: (TensorProto.FLOAT, [1, "tokens"]),
        },
    )
    decoder = _extract(
        model,
        inputs=[asr, f0, energy, "style", sines],
        outputs=[AUDIO],
        renames={asr: ASR, f0: F0, energy: ENERGY, sines: SINES},
        new_inputs={
            asr: (TensorProto.FLOAT, [1, "channels", "frames"]),
            f0: (TensorProto.FLOAT, [1, "rate2_frames"]),
            energy: (TensorProto.FLOAT, [1, "rate2_frames"]),
            sines: (TensorProto.FLOAT, [1, "samples", HARMONICS]),
        },
        new_outputs={},
    )
    layers = _blend_normalisations(decoder)
    for stage in (prosody, decoder):
        product_convs(stage, signed_weights)
    return KokoroSplit(
        prosody_stage=prosody.SerializeToString(),
        decoder_stage=decoder.SerializeToString(),
        norm_layers=layers,
    )


def _decoder_inputs(
    nodes: Sequence[onnx.NodeProto], producer: dict[str, onnx.NodeProto]
) -> tuple[str, str, str]:
    """The aligned text features, the F0 curve and the energy curve: the tensors computed by
    ``/encoder/`` nodes that ``/decoder/`` nodes read (besides quantized copies)."""
    consumers: dict[str, list[onnx.NodeProto]] = {}
    for node in nodes:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    read: dict[str, onnx.NodeProto] = {}
    for node in nodes:
        if not node.name.startswith("/decoder/"):
            continue
        for name in node.input:
            source = producer.get(name)
            if (
                source is not None
                and source.name.startswith("/encoder/")
                and source.op_type not in ("Constant", "DynamicQuantizeLinear")
            ):
                read[name] = source
    asr = [n for n, s in read.items() if s.op_type == "MatMul"]
    curves = [n for n, s in read.items() if s.op_type == "Reshape"]

    def feeds_generator(curve: str) -> bool:
        return any(
            _GENERATOR in user.name
            for reader in consumers.get(curve, [])
            for out in reader.output
            for user in consumers.get(out, [])
        )

    f0 = [c for c in curves if feeds_generator(c)]
    energy = [c for c in curves if not feeds_generator(c)]
    if len(asr) != 1 or len(f0) != 1 or len(energy) != 1 or len(read) != 3:
        raise GraphSplitError(
            f"expected the decoder to read aligned features, F0 and energy, found {sorted(read)}"
        )
    return asr[0], f0[0], energy[0]


def _harmonic_sines(nodes: Sequence[onnx.NodeProto]) -> str:
    sins = [n for n in nodes if n.op_type == "Sin" and "/m_source/" in n.name]
    if len(sins) != 1:
        raise GraphSplitError(f"expected one Sin in the harmonic source, found {len(sins)}")
    return str(sins[0].output[0])


def _blend_normalisations(model: onnx.ModelProto) -> int:
    """Rewrite every ``(x - mean(x)) / sqrt(mean((x - mean)^2) + eps)`` over time to use the
    blended statistics (module docstring), in place; returns the number of layers. Each layer's
    statistics are ``[1, channels, 1]`` (a prior of ``[1, 1, 1]`` broadcasts)."""
    graph = model.graph
    consumers: dict[str, list[onnx.NodeProto]] = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)

    added: dict[str, list[onnx.NodeProto]] = {}  # after the node of that name
    layers = 0
    one = "norm_one"
    graph.initializer.append(numpy_helper.from_array(np.ones(1, dtype=np.float32), one))
    graph.input.append(helper.make_tensor_value_info(PRIOR_WEIGHT, TensorProto.FLOAT, [1]))
    for node in list(graph.node):
        if node.op_type != "ReduceMean":
            continue
        subs = [c for c in consumers.get(node.output[0], []) if c.op_type == "Sub"]
        if not subs:
            continue  # the variance's own mean
        squares = [c for c in consumers.get(subs[0].output[0], []) if c.op_type == "Mul"]
        variances = (
            [c for c in consumers.get(squares[0].output[0], []) if c.op_type == "ReduceMean"]
            if squares and list(squares[0].input) == [subs[0].output[0]] * 2
            else []
        )
        if len(subs) != 1 or len(variances) != 1:
            raise GraphSplitError(f"{node.name}: not an instance normalisation")
        i = layers
        layers += 1
        x, axes, mean = node.input[0], node.input[1], node.output[0]
        p = f"norm{i}_"
        variance = variances[0]
        own_variance = variance.output[0]
        blended = p + "v"
        for user in consumers.get(own_variance, []):
            user.input[:] = [blended if n == own_variance else n for n in user.input]
        # The blended mean m = w * prior_mean + (1 - w) * window_mean feeds the layer's
        # x - m; its variance is the blend of each part's mean square deviation from m:
        # w * (prior_meansq - m * (2 * prior_mean - m)) + (1 - w) * mean((x - m)^2). At w = 0
        # both are the original layer's own arithmetic (0 * a + 1 * b is b).
        added[node.name] = [
            helper.make_node("Mul", [x, x], [p + "xx"], name=p + "xx"),
            helper.make_node(
                "ReduceMean", [p + "xx", axes], [window_meansq(i)], name=p + "msq", keepdims=1
            ),
            helper.make_node("Identity", [mean], [window_mean(i)], name=p + "mean_out"),
            helper.make_node("Sub", [one, PRIOR_WEIGHT], [p + "own"], name=p + "own"),
            helper.make_node("Mul", [prior_mean(i), PRIOR_WEIGHT], [p + "pm"], name=p + "pm"),
            helper.make_node("Mul", [mean, p + "own"], [p + "wm"], name=p + "wm"),
            helper.make_node("Add", [p + "pm", p + "wm"], [p + "m"], name=p + "m"),
        ]
        added[variance.name] = [
            helper.make_node("Add", [prior_mean(i), prior_mean(i)], [p + "2pm"], name=p + "2pm"),
            helper.make_node("Sub", [p + "2pm", p + "m"], [p + "2pm_m"], name=p + "2pm_m"),
            helper.make_node("Mul", [p + "m", p + "2pm_m"], [p + "cross"], name=p + "cross"),
            helper.make_node("Sub", [prior_meansq(i), p + "cross"], [p + "pd0"], name=p + "pd0"),
            # A prior's mean square below its squared mean (rounding) is no variance.
            helper.make_node("Relu", [p + "pd0"], [p + "pd"], name=p + "pd"),
            helper.make_node("Mul", [p + "pd", PRIOR_WEIGHT], [p + "wpd"], name=p + "wpd"),
            helper.make_node("Mul", [own_variance, p + "own"], [p + "wov"], name=p + "wov"),
            helper.make_node("Add", [p + "wpd", p + "wov"], [blended], name=p + "v"),
        ]
        subs[0].input[1] = p + "m"
        # A symbolic channel count of its own for each layer, and one for its prior (which
        # may be [1, 1, 1]): a name shared by tensors of different sizes tells ONNX Runtime
        # that their buffers are interchangeable.
        for name in (prior_mean(i), prior_meansq(i)):
            shape: list[int | str] = [1, f"norm{i}_prior_channels", 1]
            graph.input.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, shape))
        for name in (window_mean(i), window_meansq(i)):
            shape = [1, f"norm{i}_channels", 1]
            graph.output.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, shape))
    if layers == 0:
        raise GraphSplitError("no instance normalisation found in the decoder")
    rewritten: list[onnx.NodeProto] = []
    for node in graph.node:
        rewritten.append(node)
        rewritten.extend(added.get(node.name, []))
    del graph.node[:]
    graph.node.extend(rewritten)
    return layers
