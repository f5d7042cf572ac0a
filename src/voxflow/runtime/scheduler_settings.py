"""The scheduler's settings and the figures it reports (``runtime.scheduler``)."""

from __future__ import annotations

from dataclasses import dataclass

from voxflow.runtime.windows import WindowPolicy

__all__ = ["SchedulerSettings", "SchedulerStats"]


@dataclass(frozen=True)
class SchedulerSettings:
    workers: int = 2
    first_window_frames: int = 16
    # A job cannot be interrupted: a stream about to run dry waits for a worker's window to
    # end. 128 frames (1.5 s of audio, ~0.1 s of work) keep that wait short with many calls,
    # for 3% more work than 256-frame windows.
    max_window_frames: int = 128
    max_lead_s: float = 20.0
    # When a fresh stream's first audio is due: the deadline that orders it against streams
    # that are playing (they come first only when they would run dry sooner). Under a burst of
    # new streams this is what their first audio may wait, so that no listener runs dry.
    first_audio_s: float = 0.1
    # How far ahead of playback a lead is rendered while its takeover is not prepared yet.
    lead_hold_s: float = 0.3
    # Threads a job on a fresh stream's way to its first audio may use when nothing else runs
    # (the engine's ``threads``); 1: never more than one.
    wide_threads: int = 2
    # How much lower than the event loop's the workers' CPU priority is (a nice increment,
    # runtime.priority): the loop's refusals, health answers and sends never wait behind them.
    worker_nice: int = 5
    # Workers besides, for the jobs of a stream's first audio only, at a priority between the
    # loop's and the other workers' (runtime.policy): a new stream's first audio starts at once
    # on a busy machine, taking a share of a core from the windows of streams with audio in hand.
    first_audio_workers: int = 1
    first_audio_nice: int = 2
    # The longest a stream that owes audio goes without sending some, however much its listener
    # has in hand (None: no bound): client frameworks end a context that is quiet for a while
    # (Pipecat: 3 s) and drop what comes after. docs/protocol.md states it.
    max_quiet_s: float | None = 1.5

    def __post_init__(self) -> None:
        if self.workers < 1:
            raise ValueError("workers must be >= 1")
        if not 1 <= self.first_window_frames <= self.max_window_frames:
            raise ValueError("need 1 <= first_window_frames <= max_window_frames")
        if self.max_lead_s <= 0:
            raise ValueError("max_lead_s must be > 0")
        if self.first_audio_s < 0 or self.lead_hold_s <= 0:
            raise ValueError("first_audio_s must be >= 0 and lead_hold_s > 0")
        if not 0 <= self.worker_nice <= 19 or not 0 <= self.first_audio_nice <= 19:
            raise ValueError("worker_nice and first_audio_nice must be within 0..19")
        if self.first_audio_workers < 0:
            raise ValueError("first_audio_workers must be >= 0")
        if self.max_quiet_s is not None and self.max_quiet_s <= 0:
            raise ValueError("max_quiet_s must be > 0 (or None)")

    @property
    def windows(self) -> WindowPolicy:
        later = min(2 * self.first_window_frames, self.max_window_frames)
        return WindowPolicy(self.first_window_frames, self.max_window_frames, later)


@dataclass(frozen=True)
class SchedulerStats:
    ready_streams: int
    active_streams: int
    workers: int  # the synthesis workers (``SchedulerSettings.workers``)
    busy_workers: int
    jobs_run: int
    deadline_misses: int
