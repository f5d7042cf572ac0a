"""A fixed set of threads for the connections' encoder steps (an ``Executor``).

Unlike ``ThreadPoolExecutor``, which starts its threads one by one as work comes, all threads
start with the pool and live until ``shutdown``: the process's thread count does not drift with
traffic, which is what an operator (and the leak tests) compare against a baseline.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import Any, TypeVar

__all__ = ["EncoderPool"]

_T = TypeVar("_T")
_Work = tuple[Future[Any], Callable[[], Any]] | None


class EncoderPool(Executor):
    def __init__(self, threads: int, name: str = "voxflow-encode") -> None:
        if threads < 1:
            raise ValueError("an encoder pool needs at least one thread")
        self._work: queue.SimpleQueue[_Work] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._stopping = False
        self._threads = [
            threading.Thread(target=self._run, name=f"{name}-{i}", daemon=True)
            for i in range(threads)
        ]
        for thread in self._threads:
            thread.start()

    def submit(self, fn: Callable[..., _T], /, *args: Any, **kwargs: Any) -> Future[_T]:
        future: Future[_T] = Future()
        with self._lock:
            if self._stopping:
                raise RuntimeError("the encoder pool is shut down")
            self._work.put((future, lambda: fn(*args, **kwargs)))
        return future

    def thread_ids(self) -> tuple[int, ...]:
        """The pool's native thread ids, for per-thread CPU."""
        return tuple(t.native_id for t in self._threads if t.native_id is not None)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._lock:
            if self._stopping:
                return
            self._stopping = True
            if cancel_futures:
                while True:
                    try:
                        item = self._work.get_nowait()
                    except queue.Empty:
                        break
                    if item is not None:
                        item[0].cancel()
            for _ in self._threads:
                self._work.put(None)  # one stop mark per thread, after the work queued
        if wait:
            for thread in self._threads:
                thread.join()

    def _run(self) -> None:
        while (item := self._work.get()) is not None:
            _finish(*item)
            # An idle thread must not keep its last job, nor the audio it made, alive until the
            # next job comes: a frame's locals live as long as the frame.
            del item


def _finish(future: Future[Any], call: Callable[[], Any]) -> None:
    if not future.set_running_or_notify_cancel():
        return
    try:
        result = call()
    except BaseException as error:  # handed to the waiter, which decides
        future.set_exception(error)
    else:
        future.set_result(result)
