"""ONNX Runtime sessions as both engines run them: CPU, no spinning, one set per thread count.

An engine loads each stage once per thread count it may be asked for: ``intra_op_threads`` for
ordinary jobs and ``wide_threads`` for jobs the scheduler runs alone (``Engine.render``'s
``threads``). Results do not depend on the count.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

import onnxruntime as ort

T = TypeVar("T")


def cpu_session(model: bytes, threads: int) -> ort.InferenceSession:
    """A CPU session of ``model`` with ``threads`` intra-op threads."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    # Spinning workers burn a core while idle, which starves the other streams' windows.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])


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
