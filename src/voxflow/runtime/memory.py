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
import ctypes.util
import gc
import logging
from collections.abc import Callable
from typing import Any

__all__ = ["collect_cycles", "free_memory_trimmer", "freeze_startup_objects", "limit_malloc_arenas"]

log = logging.getLogger(__name__)


def _libc_function(name: str) -> Any | None:
    """The C library's function ``name``, or None where this C library has none."""
    try:
        return getattr(ctypes.CDLL(ctypes.util.find_library("c")), name)
    except (OSError, AttributeError, TypeError):
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
