"""``EncoderPool`` (``voxflow.connection.encoder_pool``): the encoder threads, all started at once
and stopped at shutdown, keeping nothing of a job once it is done."""

from __future__ import annotations

import threading
import time
import weakref

import pytest

from voxflow.connection.encoder_pool import EncoderPool


def _pool_threads(name: str) -> int:
    """The running threads of the pool ``name`` (other tests' threads may come and go in this
    process meanwhile, so the process's count says nothing)."""
    return sum(1 for thread in threading.enumerate() if thread.name.startswith(f"{name}-"))


def test_the_encoder_pool_starts_its_threads_at_once_and_stops_them() -> None:
    assert _pool_threads("start-stop-pool") == 0
    pool = EncoderPool(2, name="start-stop-pool")
    try:
        assert _pool_threads("start-stop-pool") == 2  # no drift with traffic: all start now
        assert pool.submit(lambda x: x * 2, 21).result(10) == 42
        failing = pool.submit(lambda: 1 / 0)
        with pytest.raises(ZeroDivisionError):
            failing.result(10)
        assert _pool_threads("start-stop-pool") == 2
    finally:
        pool.shutdown(wait=True)
    assert _pool_threads("start-stop-pool") == 0
    with pytest.raises(RuntimeError, match="shut down"):
        pool.submit(lambda: None)


def test_an_idle_pool_thread_keeps_nothing_of_its_last_job() -> None:
    # A slow reader's last chunks (hundreds of kilobytes of audio) stayed alive in the idle
    # threads' frames until the next job came (docs/reliability.md, the slow readers).
    class Chunk:
        pass

    pool = EncoderPool(1, name="test-pool")
    try:
        future = pool.submit(Chunk)
        made = weakref.ref(future.result(10))
        del future
        deadline = time.monotonic() + 10
        while made() is not None and time.monotonic() < deadline:
            time.sleep(0.01)  # the thread drops its last job once it is back waiting for work
        assert made() is None
    finally:
        pool.shutdown(wait=True)
