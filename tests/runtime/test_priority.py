"""Worker threads below the event loop: the nice value is the calling thread's alone."""

from __future__ import annotations

import os
import sys
import threading
import time

import pytest

from voxflow.engines.piper import PiperEngine
from voxflow.runtime.priority import lower_thread_priority
from voxflow.runtime.scheduler import Scheduler
from voxflow.runtime.scheduler_settings import SchedulerSettings

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="per-thread nice is Linux's")


def _nice_after(increment: int) -> tuple[int, int]:
    """(the nice value before, after) ``lower_thread_priority(increment)`` in a fresh thread."""
    seen: list[int] = []

    def run() -> None:
        thread = threading.get_native_id()
        seen.append(os.getpriority(os.PRIO_PROCESS, thread))
        lower_thread_priority(increment)
        seen.append(os.getpriority(os.PRIO_PROCESS, thread))

    worker = threading.Thread(target=run)
    worker.start()
    worker.join()
    return seen[0], seen[1]


def test_the_calling_thread_is_lowered_and_no_other() -> None:
    mine = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    before, after = _nice_after(5)
    assert after == min(19, before + 5)
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == mine


def test_zero_leaves_the_thread_as_it_is() -> None:
    before, after = _nice_after(0)
    assert after == before


def test_the_scheduler_workers_run_lowered(engine: PiperEngine) -> None:
    main = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    existing = set(threading.enumerate())  # other tests' schedulers may still run
    scheduler = Scheduler(engine, SchedulerSettings(workers=2, worker_nice=3))
    try:
        workers = [
            t
            for t in threading.enumerate()
            if t.name.startswith("voxflow-worker-") and t not in existing
        ]
        assert len(workers) == 2
        wanted = min(19, main + 3)
        deadline = time.monotonic() + 10.0  # each worker lowers itself as it starts
        for worker in workers:
            assert worker.native_id is not None
            while os.getpriority(os.PRIO_PROCESS, worker.native_id) != wanted:
                assert time.monotonic() < deadline, "a worker runs at the loop's priority"
                time.sleep(0.01)
    finally:
        scheduler.shutdown()


def test_a_nice_value_out_of_range_is_refused() -> None:
    with pytest.raises(ValueError):
        SchedulerSettings(worker_nice=20)
