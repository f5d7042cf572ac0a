"""Tests for voxflow.server.cpu_parts: the process's CPU time by part, read per thread."""

from __future__ import annotations

import threading
import time

import pytest

from voxflow.runtime.ledger import WorkLedger
from voxflow.server.cpu_parts import CpuParts, thread_cpu_s


def _spin(seconds: float) -> None:
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def test_a_threads_cpu_time_grows_with_its_work_and_an_unknown_one_is_zero() -> None:
    me = threading.get_native_id()
    before = thread_cpu_s(me)
    _spin(0.1)
    assert thread_cpu_s(me) - before >= 0.05  # ticks of 10 ms
    assert thread_cpu_s(2**31 - 7) == 0.0


def test_the_parts_add_up_to_the_process_and_each_thread_lands_in_its_own() -> None:
    ids: list[int] = []
    done, collected = threading.Event(), threading.Event()

    def encoder() -> None:  # alive until collected, as a pool's thread is
        ids.append(threading.get_native_id())
        _spin(0.2)
        done.set()
        collected.wait(10)

    thread = threading.Thread(target=encoder)
    thread.start()
    done.wait(10)
    ledger = WorkLedger(text_stage_s=0.01, window_s=0.02, context_s=0.005, rendered_audio_s=1.5)
    collector = CpuParts(lambda: ledger, lambda: (), lambda: tuple(ids))
    families = {family.name: family for family in collector.collect()}
    collected.set()
    thread.join()
    parts = {s.labels["part"]: s.value for s in families["voxflow_cpu_seconds"].samples}
    assert set(parts) == {
        "text_stage",
        "lead_text_stage",
        "windows",
        "lead_windows",
        "scheduling",
        "encode",
        "event_loop",
        "other",
    }
    assert parts["encode"] >= 0.1  # the encoder thread's spin, read from /proc
    assert parts["windows"] == pytest.approx(0.02)
    assert parts["event_loop"] == pytest.approx(time.thread_time(), abs=0.05)
    assert sum(parts.values()) == pytest.approx(time.process_time(), abs=0.05)
    (context,) = families["voxflow_window_context_cpu_seconds"].samples
    (rendered,) = families["voxflow_rendered_audio_seconds"].samples
    assert context.value == pytest.approx(0.005)
    assert rendered.value == pytest.approx(1.5)
