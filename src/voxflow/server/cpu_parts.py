"""The server process's CPU time by part, for ``/metrics``: where a second of audio's cost goes.

``voxflow_cpu_seconds_total{part}`` adds up to the process's CPU time:

* ``text_stage``, ``lead_text_stage``, ``windows``, ``lead_windows``: the synthesis jobs, by what
  each was for (``voxflow.runtime.ledger``); ``voxflow_window_context_cpu_seconds_total`` is the
  share of the windows their decoder context takes (an estimate, part of both kinds);
* ``scheduling``: the rest of the synthesis threads' time (the policy, its lock, the delivery of
  results to the sessions' sinks);
* ``encode``: the encoder threads (resampling, PCM and compressed encoders);
* ``event_loop``: the loop's thread (the protocols' framing, JSON and base64, websockets, the
  sessions and their text);
* ``other``: every other thread (ONNX Runtime's pool when a job runs alone on several cores,
  the garbage collector's pauses on other threads, uvicorn's and the libraries' threads).

Per-thread CPU time is read from ``/proc/self/task`` (Linux); elsewhere each thread's part is 0
and ``other`` holds it. Collected on the event loop, as all of ``/metrics``: ``thread_time``
there is the loop's own.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Iterator

from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector

from voxflow.runtime.ledger import WorkLedger

__all__ = ["CpuParts", "thread_cpu_s"]

_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def thread_cpu_s(native_id: int) -> float:
    """User and system CPU seconds of this process's thread ``native_id`` (0 where unknown)."""
    try:
        with open(f"/proc/self/task/{native_id}/stat", "rb") as stat:
            raw = stat.read()
    except OSError:
        return 0.0
    # The command name may hold spaces and parentheses: the fields start after the last ')'.
    fields = raw[raw.rfind(b")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS  # utime, stime


class CpuParts(Collector):
    def __init__(
        self,
        ledger: Callable[[], WorkLedger],
        synthesis_threads: Callable[[], Iterable[int]],
        encode_threads: Callable[[], Iterable[int]],
    ) -> None:
        self._ledger = ledger
        self._synthesis = synthesis_threads
        self._encode = encode_threads

    def collect(self) -> Iterator[CounterMetricFamily]:
        total = time.process_time()
        work = self._ledger()
        synthesis = sum(thread_cpu_s(tid) for tid in self._synthesis())
        parts = {
            "text_stage": work.text_stage_s,
            "lead_text_stage": work.lead_text_stage_s,
            "windows": work.window_s,
            "lead_windows": work.lead_window_s,
            "scheduling": max(0.0, synthesis - work.jobs_s),
            "encode": sum(thread_cpu_s(tid) for tid in self._encode()),
            "event_loop": time.thread_time(),
        }
        parts["other"] = max(0.0, total - sum(parts.values()))
        family = CounterMetricFamily(
            "voxflow_cpu_seconds",
            "CPU time of the server process, by part (they add up to the process's)",
            labels=["part"],
        )
        for part, seconds in parts.items():
            family.add_metric([part], seconds)
        yield family
        yield CounterMetricFamily(
            "voxflow_window_context_cpu_seconds",
            "Of the windows' CPU time, what their decoder context takes (estimated)",
            value=work.context_s,
        )
        yield CounterMetricFamily(
            "voxflow_rendered_audio_seconds",
            "Audio the synthesis windows rendered (leads' and what no listener heard included)",
            value=work.rendered_audio_s,
        )
