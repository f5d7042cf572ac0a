"""Give memory that the process has freed back to the operating system.

glibc's allocator keeps freed blocks in per-thread heaps for reuse; with worker threads whose
allocations vary from kilobytes (a small window) to hundreds of megabytes (a long text stage),
the process's resident size only ever grows (measured: +170 MiB after nine requests, all of it
free memory, none of it reachable from Python). ``malloc_trim`` returns it; it takes well under a
millisecond, so the scheduler calls it whenever its workers fall idle (at most twice a second).
On a C library without it (musl, macOS), this is a no-op.

Trimming returns free pages, not fragmented ones: each thread that allocates gets a heap
(*arena*) of its own, up to eight per core, and freed blocks scattered across many arenas keep
their pages. ``limit_malloc_arenas`` caps their number (glibc's ``M_ARENA_MAX``, as the
``MALLOC_ARENA_MAX`` environment variable would) before the server starts its threads: one
process of a long-running server, whose resident size must not creep with the requests served.

Python's cyclic garbage collector, in its full collections, walks every object the process
holds: the voice, the normaliser's tables, the app, some 80,000 objects once started, for 20 ms
on an idle machine and 60 to 90 ms while a burst of connections comes in (measured), all on the
event loop. None of them will ever be garbage. ``freeze_startup_objects`` moves them out of the
collector's reach once the server has started, so that a collection walks only what requests
made since (docs/reliability.md, *Faults*).
"""

from __future__ import annotations

import ctypes
import gc
import logging
from collections.abc import Callable
from typing import Any

__all__ = [
    "COLLECT_EVERY_S",
    "TRIM_AFTER_S",
    "MemoryUpkeep",
    "collect_cycles",
    "free_memory_trimmer",
    "freeze_startup_objects",
    "limit_malloc_arenas",
]

log = logging.getLogger(__name__)

# Freed memory is returned to the OS once the workers have been idle this long after a job.
TRIM_AFTER_S = 0.25
# Cyclic garbage is collected before a trim at most this often (``MemoryUpkeep``).
COLLECT_EVERY_S = 5.0


def _libc_function(name: str) -> Any | None:
    """The C library's function ``name``, or None where this C library has none.

    Looked up among the symbols the process has loaded, the C library's among them, rather than
    through ``ctypes.util.find_library``, which runs ``ldconfig`` in a child process each time
    (each scheduler asks)."""
    try:
        return getattr(ctypes.CDLL(None), name)
    except (OSError, AttributeError):
        return None


def collect_cycles() -> int:
    """Run a full cyclic collection now; returns the number of objects it found unreachable.

    A connection that ends leaves reference cycles behind: each of its cancelled tasks keeps
    its exception, whose traceback holds the task's frames, whose locals hold the session and
    the audio it had queued (a slow reader's: 14 to 20 MiB, measured). The collector frees them
    at its next full collection, which an idle server may not run for a long time, so the
    scheduler runs one when a connection has ended and its workers are idle
    (``Scheduler.trim_soon(collect=True)``). It walks only what is not frozen
    (``freeze_startup_objects``)."""
    return gc.collect()


def free_memory_trimmer() -> Callable[[], None]:
    """A function that returns freed heap memory to the OS (a no-op where unsupported)."""
    trim = _libc_function("malloc_trim")
    if trim is None:
        log.debug("malloc_trim is not available; freed memory stays with the process")
        return lambda: None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int

    def release() -> None:
        trim(0)

    return release


_M_ARENA_MAX = -8  # glibc's malloc.h


def limit_malloc_arenas(arenas: int) -> bool:
    """Cap glibc's heaps at ``arenas`` (threads started later share them); whether it took."""
    mallopt = _libc_function("mallopt")
    if mallopt is None:
        log.debug("mallopt is not available; the C library sizes its own heaps")
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(_M_ARENA_MAX, arenas))


def freeze_startup_objects() -> int:
    """Keep every object alive now out of the cyclic collector's walks; how many are frozen.

    Garbage is collected first, so that only live objects are frozen: a frozen object still goes
    when its last reference does, and only a cycle among frozen objects would stay. Call it once
    the server has started (its voice loaded), in the server process only.
    """
    gc.collect()
    gc.freeze()
    frozen = gc.get_freeze_count()
    log.debug("%d start-up objects kept out of the garbage collector's walks", frozen)
    return frozen


class MemoryUpkeep:
    """When a scheduler's idle workers return freed memory, and when they collect cycles first.

    A trim falls due ``trim_after_s`` after the workers' last job (the memory it used is free by
    then: its results went out and were dropped), or after ``ask`` (memory freed outside a job:
    a connection that held much audio ended). It runs once no job runs. A collection asked for
    with ``ask(collect=True)`` runs before a trim, at most once every ``collect_every_s``: a burst
    of connections ending costs the event loop one collection's hold on the GIL, not one each.
    One asked for too soon is put off to then, never dropped.

    No lock and no thread of its own: the scheduler calls it under its lock, with its clock's
    time, and runs ``trim`` (and ``collect_cycles``) on a worker.
    """

    def __init__(
        self,
        trim: Callable[[], None],
        trim_after_s: float = TRIM_AFTER_S,
        collect_every_s: float = COLLECT_EVERY_S,
    ) -> None:
        self.trim = trim
        self._trim_after_s = trim_after_s
        self._collect_every_s = collect_every_s
        self._trim_due: float | None = None
        self._collect_due = False
        self._collected_at = -collect_every_s

    def job_done(self, now: float) -> None:
        """A job ended at ``now``: trim once the workers have been idle ``trim_after_s``."""
        self._trim_due = now + self._trim_after_s

    def ask(self, now: float, collect: bool = False) -> bool:
        """Trim soon, collecting cycles first with ``collect``; whether a trim is newly due (a
        waiting worker must wake for it)."""
        self._collect_due = self._collect_due or collect
        if self._trim_due is not None:
            return False
        self._trim_due = now + self._trim_after_s
        return True

    def take(self, now: float) -> bool:
        """With no job running: whether a trim is due now (it is then the caller's to run)."""
        if self._trim_due is None or now < self._trim_due:
            return False
        self._trim_due = None
        return True

    def wait_s(self, now: float) -> float | None:
        """Seconds until a trim is due (None: none is)."""
        return None if self._trim_due is None else max(0.0, self._trim_due - now)

    def collect_first(self, now: float) -> bool:
        """Whether the trim just taken collects cycles first (then call ``collected``); one asked
        for too soon puts the next trim off to when it may run."""
        if not self._collect_due:
            return False
        wait = self._collected_at + self._collect_every_s - now
        if wait > 0:
            self._trim_due = now + wait
            return False
        self._collect_due = False
        return True

    def collected(self, now: float) -> None:
        """A collection ended at ``now``."""
        self._collected_at = now
