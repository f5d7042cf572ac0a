"""ONNX Runtime sessions as both engines run them: CPU, no spinning, one set per thread count.

An engine loads each stage once per thread count it may be asked for: ``intra_op_threads`` for
ordinary jobs and ``wide_threads`` for jobs the scheduler runs alone (``Engine.render``'s
``threads``). Results do not depend on the count.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Generic, TypeVar

import onnxruntime as ort
from onnxruntime.capi.onnxruntime_pybind11_state import (
    Fail,
    InvalidArgument,
    InvalidGraph,
    InvalidProtobuf,
    NoSuchFile,
    RuntimeException,
)

from voxflow.engines.split_cache import made_once, written_whole

log = logging.getLogger(__name__)

# What ONNX Runtime raises for a model file it cannot load (its classes are not OSError's).
_UNLOADABLE = (Fail, InvalidArgument, InvalidGraph, InvalidProtobuf, NoSuchFile, RuntimeException)

T = TypeVar("T")


def cpu_session(model: bytes, threads: int, optimized: Path | None = None) -> ort.InferenceSession:
    """A CPU session of ``model`` with ``threads`` intra-op threads.

    ``optimized``: where ``model``'s graph as ONNX Runtime optimizes it for this machine is kept
    (``SplitCache``). Present, the session is made from it with no optimization (the same
    session, bit for bit, made in a third of the time: 0.06 s of CPU instead of 0.19 s for the
    bundled voice's three stages); absent, the session is made from ``model`` and the optimized
    graph written there, under a temporary name then renamed. A file that does not load is
    logged and made again; a directory that cannot be written costs nothing but the time."""
    if optimized is None:
        return ort.InferenceSession(
            model, session_options(threads), providers=["CPUExecutionProvider"]
        )
    if not optimized.exists():
        with made_once(optimized):
            if not optimized.exists():  # not optimized by another process while this one waited
                return _optimized_session(model, threads, optimized)
    found = _kept_session(optimized, threads)
    return found if found is not None else _optimized_session(model, threads, optimized)


def _kept_session(optimized: Path, threads: int) -> ort.InferenceSession | None:
    """A session of the optimized graph kept at ``optimized``, made with no optimization; None
    where it does not load (logged)."""
    options = session_options(threads)
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    try:
        return ort.InferenceSession(str(optimized), options, providers=["CPUExecutionProvider"])
    except (*_UNLOADABLE, OSError) as error:
        log.warning("split cache: %s does not load (%s); optimizing again", optimized, error)
    return None


def session_options(threads: int) -> ort.SessionOptions:
    """The options every engine session is made with: ``threads`` intra-op threads, one
    inter-op thread, no spinning."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    # Spinning workers burn a core while idle, which starves the other streams' windows.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return options


def _optimized_session(model: bytes, threads: int, optimized: Path) -> ort.InferenceSession:
    """A session of ``model``, its optimized graph written to ``optimized`` on the way (or,
    where that cannot be written, not kept)."""
    session = None
    try:
        with written_whole(optimized) as temporary:
            options = session_options(threads)
            options.optimized_model_filepath = str(temporary)
            # Not its warning that the graph may hold this machine's own optimizations: the
            # file's name says which machine (SplitCache).
            options.log_severity_level = 3
            session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    except OSError as error:
        log.warning("split cache: cannot write %s (%s)", optimized, error)
    if session is None:
        options = session_options(threads)
        session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    return session


def shrinking_run_options() -> ort.RunOptions:
    """Run options that give the memory arena back after each run.

    ONNX Runtime keeps the arena at its largest use ever unless told to shrink it after each
    run, which lets the process return to its baseline after a long utterance or a large window
    (docs/benchmarks.md, memory). Shrinking is not free: the next run allocates again (a
    256-frame decoder window took 11% longer with it), so the engines shrink only after runs
    larger than their ordinary streaming windows."""
    options = ort.RunOptions()
    options.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
    return options


class ByThreads(Generic[T]):
    """One set of sessions (``T``) per thread count: the default, and a wide one if wider."""

    def __init__(self, build: Callable[[int], T], threads: int, wide_threads: int) -> None:
        self.default_threads = threads
        self._sets = {threads: build(threads)}
        if wide_threads > threads:
            self._sets[wide_threads] = build(wide_threads)

    def get(self, threads: int | None) -> T:
        """The set with ``threads`` intra-op threads if loaded, else the default one."""
        found = None if threads is None else self._sets.get(threads)
        return found if found is not None else self._sets[self.default_threads]
