"""Memory stays bounded: long spoken forms are cut into pieces, the engine refuses what would not
fit, and the process's resident size comes back down after a large request."""

from __future__ import annotations

import gc
import os
import platform
import time
import weakref
from collections.abc import Callable
from pathlib import Path

import pytest

from voxflow.engines.base import VoiceSettings
from voxflow.engines.piper import PiperEngine, TextTooLongError
from voxflow.engines.registry import VoiceRegistry
from voxflow.runtime import scheduler as scheduler_module
from voxflow.runtime.memory import (
    free_memory_trimmer,
    freeze_startup_objects,
    limit_malloc_arenas,
)
from voxflow.runtime.scheduler import Scheduler, SchedulerSettings
from voxflow.session.events import DoneOut, SubmitSegment
from voxflow.session.local import LocalRunner
from voxflow.session.session import Session, SessionConfig, StartOptions

REPLY = (
    "I can definitely help you reschedule your appointment to next Tuesday afternoon if that "
    "works better for you. Would you like the morning slot instead?"
)


def _rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    pytest.skip("no /proc/self/status")


def _speak(scheduler: Scheduler, text: str) -> None:
    session = Session(SessionConfig(default_voice="joe"), VoiceRegistry().get)
    runner = LocalRunner(session, scheduler)
    runner.session.start("a", StartOptions(paced=False), runner.now())
    runner.session.text("a", text, runner.now())
    runner.session.end("a", runner.now())
    assert isinstance(runner.until_finished("a", timeout=300)[-1], DoneOut)


def test_the_engine_refuses_a_text_stage_it_cannot_bound(engine: PiperEngine) -> None:
    with pytest.raises(TextTooLongError, match="phoneme ids, at most"):
        engine.prepare("nine " * 600, "joe", VoiceSettings())


def test_a_long_spoken_form_is_cut_into_bounded_pieces() -> None:
    session = Session(SessionConfig(default_voice="joe"), VoiceRegistry().get)
    session.text("a", "9" * 250, 0.0)
    session.end("a", 0.0)
    texts = [o.request.text for o in session.drain() if isinstance(o, SubmitSegment)]
    assert " ".join(texts).split() == ["nine"] * 250
    assert all(len(text) <= 300 for text in texts)
    assert len(texts[0]) <= 80  # the first piece is waited for


def test_memory_returns_after_a_long_run_of_digits(engine: PiperEngine) -> None:
    scheduler = Scheduler(engine, SchedulerSettings(workers=2))
    try:
        for _ in range(2):
            _speak(scheduler, REPLY)
        gc.collect()
        free_memory_trimmer()()
        baseline = _rss_mib()
        _speak(scheduler, "9" * 250)
        time.sleep(0.6)  # the workers return freed memory once idle, at most twice a second
        gc.collect()
        # Before pieces and arena shrinking this request left +640 MiB behind.
        assert _rss_mib() - baseline < 100
    finally:
        scheduler.shutdown()


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="M_ARENA_MAX is glibc's")
def test_the_heap_count_can_be_capped_on_glibc() -> None:
    # The C library's default for this process is larger; capping it is allowed at any time.
    assert limit_malloc_arenas(8 * (os.cpu_count() or 1)) is True


def test_trim_soon_returns_freed_memory_once_the_workers_are_idle(engine: PiperEngine) -> None:
    # Memory a connection freed after the workers' last trim (its buffered audio) is returned
    # on request, without waiting for more work.
    scheduler = Scheduler(engine, SchedulerSettings(workers=2))
    trims: list[float] = []
    scheduler._trim = lambda: trims.append(time.monotonic())  # the count, not the C call
    try:
        time.sleep(0.5)
        assert trims == []  # idle, nothing asked for: no trim
        scheduler.trim_soon()
        scheduler.trim_soon()  # one request pending: one trim
        deadline = time.monotonic() + 10.0
        while not trims:
            assert time.monotonic() < deadline, "trim_soon never trimmed"
            time.sleep(0.01)
        time.sleep(0.5)
        assert len(trims) == 1
    finally:
        scheduler.shutdown()


class _Cycle:
    """Garbage only the cyclic collector frees, as a finished connection's tasks leave."""

    def __init__(self) -> None:
        self.itself = self


def _wait_for(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 10.0
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.01)


def test_trim_soon_collects_cycles_when_asked_at_most_so_often(
    engine: PiperEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(scheduler_module, "_COLLECT_EVERY_S", 1.0)
    scheduler = Scheduler(engine, SchedulerSettings(workers=2))
    trims: list[float] = []
    scheduler._trim = lambda: trims.append(time.monotonic())
    gc.disable()  # only the scheduler's collection frees the cycles below
    try:
        kept = weakref.ref(_Cycle())
        scheduler.trim_soon()
        _wait_for(lambda: len(trims) == 1, "trim_soon never trimmed")
        assert kept() is not None  # a plain trim leaves the collector alone
        scheduler.trim_soon(collect=True)
        _wait_for(lambda: len(trims) == 2, "trim_soon never trimmed")
        assert kept() is None  # collected, then trimmed
        # Asked again at once: this trim returns memory, the collection waits its turn.
        again = weakref.ref(_Cycle())
        scheduler.trim_soon(collect=True)
        _wait_for(lambda: len(trims) == 3, "trim_soon never trimmed")
        assert again() is not None
        _wait_for(lambda: len(trims) == 4, "the put-off collection never came")
        assert again() is None and trims[3] - trims[1] >= 0.9
    finally:
        gc.enable()
        scheduler.shutdown()


def test_freezing_collects_the_garbage_first_and_freezes_what_lives() -> None:
    class Node:
        other: object = None

    garbage = Node()
    garbage.other = garbage  # a cycle: only the collector frees it
    gone = weakref.ref(garbage)
    del garbage
    kept = Node()
    try:
        frozen = freeze_startup_objects()
        assert gone() is None  # collected, not frozen for the life of the process
        # What it returns is the count it froze. Not compared for equality: other threads of the
        # test process (servers and engines other tests left running) may change the frozen set
        # by a few objects before the count is read again (seen once: 298,796 against 298,793).
        assert frozen > 0
        assert abs(gc.get_freeze_count() - frozen) < frozen // 100
        assert not any(o is kept for o in gc.get_objects())  # out of the collector's walks
    finally:
        gc.unfreeze()
    assert any(o is kept for o in gc.get_objects())
