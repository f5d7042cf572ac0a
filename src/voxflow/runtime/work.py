"""The bookkeeping types of one stream in the scheduler: its lanes, its queued work and its jobs.

A stream has two *lanes*. The main lane works through the queue in order: prepare the head
request, then render it window by window. The ahead lane only ever prepares a takeover whose lead
is the head, beside the lead's windows, so that the switch can come after the lead's first words.
A ``Work`` is one queued request and how far it has come; a ``Job`` is one step of a lane on a
work (a prepare, or one window of frames) handed to a worker.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from voxflow.engines.base import Utterance
from voxflow.runtime.jobs import SegmentRequest

__all__ = ["Job", "Lane", "Timing", "Work"]


class Lane(enum.Enum):
    MAIN = "main"
    AHEAD = "ahead"


@dataclass(frozen=True)
class Timing:
    """When a lane's next job may start (``release``) and should start (``deadline``)."""

    release: float
    deadline: float


@dataclass(eq=False)
class Work:
    """One submitted request and how far it has come."""

    request: SegmentRequest
    utterance: Utterance | None = None
    start: int = 0  # first frame to render
    end: int = 0  # one past the last frame to render (set once prepared)
    next: int = 0
    splice: int = 0  # leading frames to cross-fade with the lead (takeover)
    continues: bool = False  # lead: its last window continues in the takeover
    decided: bool = False  # lead: the switch is chosen, its end is final
    started: bool = False  # its first window was delivered
    ended: bool = False  # its last window was delivered
    preparing: bool = False
    # Its windows are cut from audio rendered before (a phrase cache hit), not rendered: they
    # cost no worker time, so they are sized and released for the listener's encoder.
    cached: bool = False


@dataclass(frozen=True)
class Job:
    lane: Lane
    work: Work
    window: tuple[int, int] | None  # None: prepare
    playback_end: float | None  # the listener's run-out time at dispatch (None: fresh)
    threads: int | None = None  # CPU threads the engine may use (None: its default)
    # Its wait for a worker was measured against its deadline (``voxflow.runtime.slack``): a
    # window of it that comes after its listener ran out is the machine's miss.
    measured: bool = False
