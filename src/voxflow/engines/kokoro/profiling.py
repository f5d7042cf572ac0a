"""A Kokoro engine's sessions with ONNX Runtime's profiler on, for ``voxflow bench-kokoro-profile``
(docs/kokoro.md, *Where the time goes*).

Inside :func:`profiled_kokoro` the engine renders as it always does (its split stages, its
session options, its windows), on sessions made like its own with profiling on; on leaving, its
own sessions are back and the profile is in :class:`KokoroProfileFiles`: ONNX Runtime's JSON,
one file a stage, and each product node's weight shape (the profile records a node's inputs but
not the initializers among them, so a ``ConvTranspose``'s weight is missing there).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import onnx
import onnxruntime as ort

from voxflow.engines.kokoro.engine import KokoroEngine
from voxflow.engines.sessions import session_options

__all__ = ["KokoroProfileFiles", "profiled_kokoro"]

# Nodes whose weight (their second input) an initializer holds, in the graphs Kokoro ships.
_WEIGHTED = frozenset({"Conv", "ConvInteger", "ConvTranspose", "MatMul", "MatMulInteger", "Gemm"})


@dataclass
class KokoroProfileFiles:
    """What one profiled span left: each stage's profile, once the span has ended."""

    prosody: Path | None = None
    decoder: Path | None = None
    weights: dict[str, list[int]] = field(default_factory=dict)  # by node name


class _ProfiledStages:
    def __init__(self, prosody: bytes, decoder: bytes, threads: int, directory: Path) -> None:
        def session(model: bytes, prefix: str) -> ort.InferenceSession:
            options = session_options(threads)
            options.enable_profiling = True
            options.profile_file_prefix = str(directory / prefix)
            return ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])

        self.prosody = session(prosody, "prosody")
        self.decoder = session(decoder, "decoder")


class _OneSet:
    """The engine's sessions per thread count, all of them the profiled ones."""

    def __init__(self, stages: _ProfiledStages) -> None:
        self._stages = stages

    def get(self, _threads: int | None) -> _ProfiledStages:
        return self._stages


@contextmanager
def profiled_kokoro(
    engine: KokoroEngine, directory: Path, threads: int = 1
) -> Iterator[KokoroProfileFiles]:
    """Profile what ``engine`` renders inside the span, on ``threads`` intra-op threads, into
    ``directory`` (module docstring). One span at a time per engine, with nothing else
    rendering on it."""
    model = engine.model()
    split = model.split
    stages = _ProfiledStages(split.prosody_stage, split.decoder_stage, threads, directory)
    files = KokoroProfileFiles(
        weights={**_weight_shapes(split.prosody_stage), **_weight_shapes(split.decoder_stage)}
    )
    own = model.swap_stages(_OneSet(stages))
    try:
        yield files
    finally:
        model.swap_stages(own)
        files.prosody = Path(stages.prosody.end_profiling())
        files.decoder = Path(stages.decoder.end_profiling())


# The engine's two stages, parsed once rather than at every span (a bench warms up and profiles
# in spans of its own, each of them reading the same graphs).
@lru_cache(maxsize=2)
def _weight_shapes(model: bytes) -> dict[str, list[int]]:
    graph = onnx.load_model_from_string(model).graph
    shapes = {i.name: list(i.dims) for i in graph.initializer}
    return {
        node.name: shapes[node.input[1]]
        for node in graph.node
        if node.op_type in _WEIGHTED and len(node.input) > 1 and node.input[1] in shapes
    }
