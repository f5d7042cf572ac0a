"""Synthesis below the event loop: the calling thread's CPU priority lowered (Linux).

A server on two cores runs a synthesis worker per core flat out under load, and the event loop
thread (health checks, refusals past the cap, every stream's frames) then waits for a core
behind them: a refusal or a ``/healthz`` answer that takes microseconds of CPU comes back tens
of milliseconds late. A worker with a higher nice value yields its core to the loop as soon as
the loop has work and takes it back when the loop sleeps, so synthesis loses only the little CPU
the loop uses. Linux keeps a nice value per thread (``setpriority`` with a thread id); other
systems apply it to the whole process, so there this does nothing.
"""

from __future__ import annotations

import logging
import os
import sys
import threading

__all__ = ["lower_thread_priority"]

log = logging.getLogger(__name__)


def lower_thread_priority(increment: int) -> None:
    """Raise the calling thread's nice value by ``increment`` (0: leave it)."""
    if increment <= 0 or sys.platform != "linux":
        return
    thread = threading.get_native_id()
    try:
        nice = os.getpriority(os.PRIO_PROCESS, thread)
        os.setpriority(os.PRIO_PROCESS, thread, min(19, nice + increment))
    except OSError as error:  # a sandbox that forbids it: run at the same priority
        name = threading.current_thread().name
        log.warning("could not lower the priority of %s: %s", name, error)
