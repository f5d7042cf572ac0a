"""``voxflow bench-kokoro-profile``: where the Kokoro engine's CPU goes, per operator and per part
of the model, from ONNX Runtime's own profiler (docs/kokoro.md, *Where the time goes*).

The engine runs as the server runs it: its split graph (``voxflow.engines.kokoro.graph``), its
session options, its windows. Only its sessions are replaced, by ones made from the same split
stages with the same options and profiling on, so each node's run time is recorded. Each
sentence is prepared once (the prosody stage, on its whole text) and rendered in windows of
``window_frames`` with the engine's context, on ``threads`` intra-op threads; then again as one
window (the original model's run) for comparison.

For each convolution and matrix product the profile's tensor shapes give its multiply-adds;
times two, the operations per audio second, and the rate each part reaches. The *floor* is what
all of them would cost at the best rate any one large node reached in the same run: a rate this
CPU demonstrably sustains on this graph, not a datasheet figure.
"""

from __future__ import annotations

import json
import math
import re
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from voxflow import (
    KokoroEngine,
    KokoroProfileFiles,
    KokoroSettings,
    SplitCache,
    VoiceRegistry,
    VoiceSettings,
    profiled_kokoro,
)

__all__ = ["KokoroProfile", "NodeTime", "format_profile", "part_of", "profile_kokoro"]

# Nodes whose multiply-adds the shapes give (the rest is elementwise, reductions, data movement).
_PRODUCTS = frozenset(
    {"Conv", "ConvInteger", "ConvTranspose", "MatMul", "MatMulInteger", "MatMulIntegerToFloat",
     "FusedMatMul", "Gemm", "QLinearConv", "QLinearMatMul"}
)  # fmt: skip
# A big node: its rate is the machine's, not its launch overhead's.
_BIG_MACS = 50_000_000
_RESBLOCK = re.compile(r"resblocks[./](\d+)")
# Snake, x + sin(a x)^2 / a, as the exporter wrote it: ops right under a residual block (its
# AdaIN layers and convolutions sit one level down); the block's residual adds are among them.
_SNAKE = re.compile(r"(resblocks|noise_res)[./]\d+/(Sin|Pow|Mul|Add|Div)(_\d+)?_kernel_time$")
# iSTFTNet's generator: three residual blocks for each of its two upsampling stages.
_RESBLOCKS_PER_STAGE = 3


@dataclass(frozen=True)
class NodeTime:
    """One node's runs in the profile, summed."""

    stage: str  # "prosody" or "decoder"
    name: str
    op: str
    seconds: float
    macs: int  # multiply-adds (0 where the shapes do not give them)


@dataclass(frozen=True)
class KokoroProfile:
    """What the profile of one mode of rendering (windows, or whole) found."""

    mode: str
    threads: int
    audio_s: float
    wall_s: float  # the renders' wall time, the profiler's own writing included
    nodes: tuple[NodeTime, ...] = field(repr=False)

    @property
    def node_s(self) -> float:
        return sum(n.seconds for n in self.nodes)

    def by(self, key: str) -> list[tuple[str, float, int]]:
        """(label, seconds, multiply-adds) per op type (``key`` "op") or per part ("part"),
        the dearest first."""
        seconds: dict[str, float] = defaultdict(float)
        macs: dict[str, int] = defaultdict(int)
        for node in self.nodes:
            label = node.op if key == "op" else part_of(node.stage, node.name, node.op)
            seconds[label] += node.seconds
            macs[label] += node.macs
        return sorted(((k, v, macs[k]) for k, v in seconds.items()), key=lambda r: -r[1])

    def best_rate(self) -> float:
        """Multiply-adds a second of the fastest big product node (0 if none)."""
        rates = [n.macs / n.seconds for n in self.nodes if n.macs >= _BIG_MACS and n.seconds > 0]
        return max(rates, default=0.0)

    def floor_s(self) -> float:
        """CPU seconds a second of audio if every product ran at ``best_rate`` and nothing else
        cost anything."""
        best = self.best_rate()
        total = sum(n.macs for n in self.nodes)
        return total / best / self.audio_s if best > 0 else math.nan

    def as_dict(self) -> dict[str, Any]:
        def rows(key: str) -> list[dict[str, Any]]:
            return [
                {
                    "name": k,
                    "cpu_s_per_audio_s": s / self.audio_s,
                    "gop_per_audio_s": 2 * m / self.audio_s / 1e9,
                }
                for k, s, m in self.by(key)
            ]

        return {
            "mode": self.mode,
            "threads": self.threads,
            "audio_s": self.audio_s,
            "node_cpu_s_per_audio_s": self.node_s / self.audio_s,
            "floor_cpu_s_per_audio_s": self.floor_s(),
            "best_gop_s": 2 * self.best_rate() / 1e9,
            "parts": rows("part"),
            "ops": rows("op"),
        }


def part_of(stage: str, name: str, op: str) -> str:
    """The part of Kokoro a node belongs to, from its name (the exporter's module paths)."""
    if stage == "prosody":
        for key, label in (
            ("bert", "prosody: text encoder (ALBERT)"),
            ("text_encoder", "prosody: text encoder (CNN, LSTM)"),
            ("F0", "prosody: F0 predictor"),
            ("N.", "prosody: energy predictor"),
        ):
            if key in name:
                return label
        return "prosody: durations and the rest"
    if name.startswith("norm") and "_" in name:
        return "decoder: statistics blend (streaming)"
    if "generator" not in name:
        return "decoder: frame-rate blocks (encode, decode)"
    if "ups." in name or "/ups" in name:
        return "generator: upsampling (ConvTranspose)"
    if "noise_convs" in name or "m_source" in name:
        return "generator: harmonic source, its convolutions in"
    found = _RESBLOCK.search(name)
    source = "noise_res" in name
    if found is not None or source:
        kind = "Snake" if _SNAKE.search(name) else "AdaIN" if "adain" in name else "convolutions"
        if source:
            return f"generator: harmonic source's resblocks, {kind}"
        stage_no = int(found.group(1)) // _RESBLOCKS_PER_STAGE + 1 if found else 0
        return f"generator: stage {stage_no} resblocks, {kind}"
    if "conv_post" in name:
        return "generator: conv_post"
    return "generator: iSTFT head and the rest"


def _macs(event: dict[str, Any], weights: dict[str, list[int]]) -> int:
    """A product node's multiply-adds, from the shapes the profile recorded (a weight the
    profile leaves out, an initializer of ConvTranspose, from ``weights``: the graph's)."""
    args = event["args"]
    op = args["op_name"]
    if op not in _PRODUCTS:
        return 0
    inputs = [next(iter(shape.values())) for shape in args.get("input_type_shape", [])]
    outputs = [next(iter(shape.values())) for shape in args.get("output_type_shape", [])]
    if not inputs or not inputs[0]:
        return 0
    x = inputs[0]
    w = weights.get(event["name"].removesuffix("_kernel_time"))
    if w is None:
        w = inputs[3] if op.startswith("QLinear") and len(inputs) > 3 else inputs[1]
    if len(w) < 2:
        return 0
    if op in ("Conv", "ConvInteger", "QLinearConv"):
        out = outputs[0] if outputs else [x[0], w[0], *x[2:]]
        return int(math.prod(out) * math.prod(w[1:]))
    if op == "ConvTranspose":  # weight (in, out / groups, kernel): each input meets its outputs
        return int(math.prod(x) * math.prod(w[1:]))
    return int(math.prod(x) * w[-1])


def _profiled_nodes(path: Path, stage: str, weights: dict[str, list[int]]) -> list[NodeTime]:
    with open(path, encoding="utf-8") as file:
        events = json.load(file)
    seconds: dict[str, float] = defaultdict(float)
    macs: dict[str, int] = defaultdict(int)
    ops: dict[str, str] = {}
    for event in events:
        if event.get("cat") != "Node":
            continue
        name = event["name"]
        ops[name] = event["args"]["op_name"]
        seconds[name] += event["dur"] / 1e6
        macs[name] += _macs(event, weights)
    return [NodeTime(stage, n, ops[n], seconds[n], macs[n]) for n in seconds]


def _nodes(files: KokoroProfileFiles) -> tuple[NodeTime, ...]:
    if files.prosody is None or files.decoder is None:
        raise RuntimeError("the profile was read before its span ended")
    return (
        *_profiled_nodes(files.prosody, "prosody", files.weights),
        *_profiled_nodes(files.decoder, "decoder", files.weights),
    )


def profile_kokoro(
    registry: VoiceRegistry,
    texts: Sequence[str],
    voice: str = "kokoro:af_heart",
    window_frames: int = 128,
    threads: int = 1,
    warmup: int = 1,
    split_cache: SplitCache | None = None,
) -> tuple[KokoroProfile, KokoroProfile]:
    """The profiles of ``texts`` rendered in windows and whole (module docstring); the first
    ``warmup`` texts are rendered once before, unprofiled, so the arena and caches are warm;
    ``split_cache``: where the engine finds the split model (as the server's)."""
    if window_frames < 2 or threads < 1 or not texts:
        raise ValueError("need window_frames >= 2, threads >= 1 and some text")
    settings = KokoroSettings(intra_op_threads=threads, wide_threads=0, split_cache=split_cache)
    engine = KokoroEngine(registry, settings)
    engine.load(voice)
    profiles = []
    for mode in ("windows", "whole"):
        window = window_frames if mode == "windows" else 0
        with tempfile.TemporaryDirectory(prefix="voxflow-kokoro-profile-") as directory:
            with profiled_kokoro(engine, Path(directory), threads):
                _render(engine, texts[:warmup], voice, window)  # the arena and caches warm
            with profiled_kokoro(engine, Path(directory), threads) as files:
                started = time.perf_counter()
                audio_s = _render(engine, texts, voice, window)
                wall = time.perf_counter() - started
            nodes = _nodes(files)
        profiles.append(KokoroProfile(mode, threads, audio_s, wall, nodes))
    return profiles[0], profiles[1]


def _render(engine: KokoroEngine, texts: Iterable[str], voice: str, window: int) -> float:
    """Render each text in windows of ``window`` frames (0: whole); the audio rendered, in s."""
    audio_s = 0.0
    for text in texts:
        utterance = engine.prepare(text, voice, VoiceSettings())
        frames = utterance.num_frames
        step = window or frames
        for lo in range(0, frames, step):
            engine.render(utterance, lo, min(frames, lo + step))
        audio_s += frames * utterance.samples_per_frame / utterance.sample_rate
    return audio_s


def format_profile(windows: KokoroProfile, whole: KokoroProfile, ops: int = 12) -> str:
    """The two profiles as tables: CPU seconds per audio second per part and per op type."""
    lines = [
        f"Kokoro profile: {windows.audio_s:.1f} s of audio, {windows.threads} intra-op thread(s)",
        f"  node time per audio s: windows {windows.node_s / windows.audio_s:.3f}, "
        f"whole {whole.node_s / whole.audio_s:.3f} (wall {windows.wall_s / windows.audio_s:.3f}"
        f" / {whole.wall_s / whole.audio_s:.3f}, profiler included)",
        f"  best rate of a big product node: {2 * windows.best_rate() / 1e9:.1f} GOP/s; "
        f"all products at it: {windows.floor_s():.3f} CPU s per audio s",
        "",
        f"  {'part':<48} {'CPU s/audio s':>13} {'share':>6} {'GOP/audio s':>11} {'GOP/s':>6}",
    ]
    lines += _rows(windows, "part", None)
    lines += [
        "",
        f"  {'op type':<48} {'CPU s/audio s':>13} {'share':>6} {'GOP/audio s':>11} {'GOP/s':>6}",
    ]
    lines += _rows(windows, "op", ops)
    return "\n".join(lines)


def _rows(profile: KokoroProfile, key: str, limit: int | None) -> list[str]:
    rows = profile.by(key)
    shown, rest = (rows, []) if limit is None else (rows[:limit], rows[limit:])
    if rest:
        shown = [
            *shown,
            (f"({len(rest)} others)", sum(r[1] for r in rest), sum(r[2] for r in rest)),
        ]
    total = profile.node_s
    out = []
    for label, seconds, macs in shown:
        per_audio = seconds / profile.audio_s
        gop = 2 * macs / profile.audio_s / 1e9
        rate = f"{2 * macs / seconds / 1e9:6.1f}" if macs and seconds > 0 else f"{'-':>6}"
        gop_text = f"{gop:11.2f}" if macs else f"{'-':>11}"
        out.append(f"  {label:<48} {per_audio:13.4f} {seconds / total:6.1%} {gop_text} {rate}")
    return out
