"""One stream's state in the scheduler: its queued work, its listener's playback clock, the
deadlines of its next jobs and what their results mean.

Pure bookkeeping, driven by ``Scheduler`` under its lock: nothing here blocks or runs a job.

A stream has two *lanes*. The main lane works through the queue in order: prepare the head
request, then render it window by window. The ahead lane only ever prepares a takeover whose lead
is the head, beside the lead's windows, so that the switch can come after the lead's first words.

Deadlines (the scheduler runs the job with the earliest one):

* a stream with no audio in hand (nothing produced yet in this run, or its listener has heard
  everything): ``fresh_since + first_audio_s``. The anchor stays put from the run's first job to
  its first audio, so a stream's first window comes before later arrivals' text stages;
* a stream with audio in hand: the moment its listener would run out, less the job's estimated
  cost and a safety margin;
* a takeover's text stage: the moment the lead's audio would run out, less its own cost.

A stream waits (its *release* time is in the future) while it is more than ``max_lead_s`` ahead
of its listener; an unpaced stream (a whole-text HTTP request) never waits for that.

A lead whose takeover is not prepared yet is rendered sparingly, because whatever it has not
rendered yet can still be spoken by the takeover with the whole sentence's prosody: in windows of
at most twice the first window, no more than ``lead_hold_s`` ahead of the listener, and never its
last word (spoken as if it ended the sentence: lengthened, falling, then silence) until the
listener is about to run out (``LEAD_URGENT_S``). When the takeover is late, the lead is heard
whole and the takeover starts at the word after it.
"""

from __future__ import annotations

import enum
from collections import deque
from dataclasses import dataclass

import numpy as np

from voxflow.engines.base import FloatArray, Utterance
from voxflow.runtime.costs import CostModel
from voxflow.runtime.handover import choose_switch
from voxflow.runtime.jobs import (
    Drained,
    Failed,
    Prepared,
    Rendered,
    SchedulerEvent,
    SegmentRequest,
    Sink,
)
from voxflow.runtime.windows import WindowPolicy

__all__ = ["Job", "Lane", "StreamState", "Timing", "Work"]

SPLICE_FRAMES = 1  # frames cross-faded where a takeover joins its lead mid-utterance
LEAD_URGENT_S = 0.35  # a held lead renders its last word when its listener has this much left
# Frames rendered before an utterance's first word: the silence before it (25 to 80 ms on the
# bundled voice) is trimmed by the seam joiner anyway, but speech can start up to two frames
# before the word's first frame (a stress mark, a breath).
LEAD_IN_FRAMES = 3
TAIL_FRAMES = 2  # of the silence after an utterance's last word, what the seam joiner keeps


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


@dataclass(frozen=True)
class Job:
    lane: Lane
    work: Work
    window: tuple[int, int] | None  # None: prepare
    playback_end: float | None  # the listener's run-out time at dispatch (None: fresh)
    threads: int | None = None  # CPU threads the engine may use (None: its default)


class StreamState:
    """See the module docstring. ``events`` results are delivered by the caller, in order."""

    def __init__(
        self,
        stream_id: int,
        sink: Sink,
        paced: bool,
        policy: WindowPolicy,
        costs: CostModel,
        first_audio_s: float,
        max_lead_s: float,
        lead_hold_s: float,
        burst_s: float = 0.0,
    ) -> None:
        self.id = stream_id
        self.sink = sink
        self.paced = paced
        self._policy = policy
        self._costs = costs
        self._first_audio_s = first_audio_s
        self._max_lead_s = max_lead_s
        self._lead_hold_s = lead_hold_s
        self._burst_s = burst_s
        self.rendered_s = 0.0  # audio rendered so far, all runs
        self.works: deque[Work] = deque()
        self.busy: set[Lane] = set()
        self.versions = {Lane.MAIN: 0, Lane.AHEAD: 0}  # invalidates queued heap entries
        self.cancelled = False
        self.input_closed = False
        self.drained_sent = False
        self.fresh_since: float | None = None
        self.first_audio_at: float | None = None
        self.audio_s = 0.0
        self.window = 0
        self.inflight_end: int | None = None  # end frame of the head's render job in flight
        self.finished_lead: Work | None = None  # a lead rendered to its end, for a late takeover

    # -- queue ---------------------------------------------------------------------------------

    def submit(self, request: SegmentRequest, now: float) -> None:
        self.works.append(Work(request))
        if self.fresh_since is None and self._out_of_audio(now):
            self.fresh_since = now

    def cancel(self) -> None:
        self.cancelled = True
        self.works.clear()
        self.finished_lead = None

    def has_work(self) -> bool:
        return bool(self.works)

    def drained(self) -> list[SchedulerEvent]:
        """``Drained`` once input is closed and everything ran (at most once)."""
        if (
            self.input_closed
            and not self.busy
            and not self.works
            and not self.cancelled
            and not self.drained_sent
        ):
            self.drained_sent = True
            return [Drained()]
        return []

    # -- what runs next -----------------------------------------------------------------------

    def runnable(self, lane: Lane) -> Work | None:
        """The work the lane would run next, or None."""
        if self.cancelled or lane in self.busy or not self.works:
            return None
        head = self.works[0]
        if lane is Lane.MAIN:
            if head.utterance is None:
                return None if head.preparing else head
            return head if head.next < head.end else None
        if len(self.works) < 2 or not head.started or head.decided:
            # A takeover's text stage waits for its lead's first window: on the time to first
            # audio the lead has the machine to itself (and may use every core for it).
            return None
        follower = self.works[1]
        takeover = follower.request.takeover
        if (
            takeover is None
            or takeover.lead_tag != head.request.tag
            or follower.utterance is not None
            or follower.preparing
        ):
            return None
        return follower

    def timing(self, lane: Lane, work: Work, now: float) -> Timing:
        end = self.playback_end()
        if lane is Lane.AHEAD:
            lead = self.works[0]
            left = 1.0 if lead.utterance is None else self._frames_s(lead, lead.end - lead.next)
            base = now if end is None or end < now else end
            cost = self._costs.prepare_s(len(work.request.text)) + self._costs.render_s(16)
            return Timing(now, base + left - cost - 0.1)
        if self.fresh_since is not None or end is None:
            anchor = self.fresh_since if self.fresh_since is not None else now
            return Timing(now, anchor + self._first_audio_s)
        if work.utterance is None:
            cost = self._costs.prepare_s(len(work.request.text))
        else:
            cost = self._costs.render_s(
                self._policy.size(self.window, end - now, self._costs.render_s)
            )
        release = end - self._max_lead_s if self.paced else now
        if self._held(work):
            release = max(release, end - self._lead_hold_s)
            if work.next >= self._hold_frame(work):
                release = max(release, end - LEAD_URGENT_S)
        return Timing(release, end - cost - 0.03)

    def take(self, lane: Lane, work: Work, now: float) -> Job:
        """Start the lane's job on ``work`` (it must be ``runnable``)."""
        self.busy.add(lane)
        if work.utterance is None:
            work.preparing = True
            return Job(lane, work, None, self.playback_end())
        end = self.playback_end()
        size = self._policy.size(
            self.window, None if end is None else end - now, self._costs.render_s
        )
        limit = work.end
        if 0 < self.rendered_s < self._burst_s:
            # The rest of the burst in one window (after a small first one): the client's
            # decoder starts once it has all of it, so neither less nor more.
            rest = self._frames_for(work, self._burst_s - self.rendered_s)
            size = max(self._policy.later_frames, rest)
        if self._held(work):
            size = min(size, self._policy.later_frames)
            hold = self._hold_frame(work)
            urgent = end is not None and end - now <= LEAD_URGENT_S
            if work.next < hold and not urgent:
                limit = hold
        self.window = size
        window = self._policy.window(work.next, limit, size)
        self.inflight_end = window[1]
        return Job(lane, work, window, end)

    def _held(self, work: Work) -> bool:
        """A prepared lead whose takeover has not decided where to switch yet, once the stream
        has rendered its burst (what the client's decoder must read before it plays)."""
        return (
            work.request.lead
            and not work.decided
            and work.utterance is not None
            and self.rendered_s >= self._burst_s
        )

    def _hold_frame(self, work: Work) -> int:
        """Where a held lead stops: one frame before its last word, so that the takeover may
        still switch in there (the switch needs one more frame of the lead to cross-fade). A
        lead too short to hold anything back is not held."""
        utterance = work.utterance
        assert utterance is not None
        if len(utterance.words) < 2:
            return work.end
        hold = utterance.words[-1].start_frame - SPLICE_FRAMES
        return hold if hold >= self._policy.first_frames else work.end

    # -- results ------------------------------------------------------------------------------

    def prepared(self, job: Job, utterance: Utterance, compute_s: float) -> list[SchedulerEvent]:
        self.busy.discard(job.lane)
        work = job.work
        work.preparing = False
        if self.cancelled or work not in self.works:
            return []
        work.utterance = utterance
        work.end = utterance.num_frames
        work.start = work.next = _lead_in(utterance)
        events: list[SchedulerEvent] = [Prepared(work.request.tag, utterance, compute_s)]
        if work.request.takeover is not None:
            self._decide(work)
        return events + self._finish_if_done()

    def rendered(
        self, job: Job, audio: FloatArray, compute_s: float, now: float
    ) -> list[SchedulerEvent]:
        self.busy.discard(job.lane)
        self.inflight_end = None
        work = job.work
        assert job.window is not None and work.utterance is not None
        if self.cancelled or work not in self.works:
            return []
        start, stop = job.window
        late = 0.0
        if job.playback_end is not None and now > job.playback_end:
            late = now - job.playback_end
        self._played(work, start, stop, now)
        work.next = stop
        events: list[SchedulerEvent] = [self._window(work, start, stop, audio, compute_s, late)]
        return events + self._finish_if_done()

    def failed(self, job: Job, error: Exception) -> list[SchedulerEvent]:
        self.busy.discard(job.lane)
        self.inflight_end = None
        work = job.work
        work.preparing = False
        if self.cancelled or work not in self.works:
            return []
        self.works.remove(work)
        return [Failed(work.request.tag, error)]

    # -- internals -------------------------------------------------------------------------------

    def _decide(self, takeover_work: Work) -> None:
        """Choose where ``takeover_work`` (prepared) takes over from its lead."""
        takeover = takeover_work.request.takeover
        assert takeover is not None and takeover_work.utterance is not None
        own = takeover_work.utterance
        lead = self.works[0] if self.works[0] is not takeover_work else None
        if lead is not None and lead.request.tag != takeover.lead_tag:
            lead = None
        if lead is None:
            finished = self.finished_lead
            self.finished_lead = None
            if finished is None or finished.request.tag != takeover.lead_tag:
                return  # the lead failed or is gone: the takeover speaks from its start
            assert finished.utterance is not None
            switch = choose_switch(
                finished.utterance, own, takeover.points, finished.utterance.num_frames
            )
            takeover_work.start = takeover_work.next = switch.start
            return
        # The takeover was prepared after the lead's first window (``runnable``), so the lead
        # has rendered something: its frames rendered or being rendered.
        assert lead.utterance is not None
        rendered = self.inflight_end if self.inflight_end is not None else lead.next
        switch = choose_switch(lead.utterance, own, takeover.points, rendered)
        lead.end = max(switch.lead_end, lead.next)
        lead.decided = True
        splice = 0
        if 0 < switch.lead_end < lead.utterance.num_frames and switch.start >= SPLICE_FRAMES:
            splice = SPLICE_FRAMES
        lead.continues = splice > 0
        takeover_work.splice = splice
        start = _lead_in(own) if switch.start == 0 else switch.start - splice
        takeover_work.start = takeover_work.next = start

    def _finish_if_done(self) -> list[SchedulerEvent]:
        """Pop finished works at the head; a work cut where it already was ends with an empty
        last window; a work with no frames ends with one too."""
        events: list[SchedulerEvent] = []
        while self.works and Lane.MAIN not in self.busy:
            head = self.works[0]
            if head.utterance is None or head.next < head.end:
                break
            if not head.ended:
                events.append(self._window(head, head.next, head.next, _EMPTY, 0.0, 0.0))
            self.works.popleft()
            if head.request.lead and not head.decided:
                self.finished_lead = head
        return events

    def _window(
        self, work: Work, start: int, stop: int, audio: FloatArray, compute_s: float, late: float
    ) -> Rendered:
        first = not work.started
        last = stop >= work.end
        work.started = True
        work.ended = last
        return Rendered(
            work.request.tag,
            start,
            stop,
            audio,
            last=last,
            compute_s=compute_s,
            late_s=late,
            first=first,
            continues=last and work.continues,
            splice_frames=work.splice if first else 0,
        )

    def _played(self, work: Work, start: int, stop: int, now: float) -> None:
        """Advance the listener's clock model by the window's audio.

        Only audio up to just after the utterance's last word counts: the seam joiner trims the
        silence after it (100 to 250 ms at the end of a sentence on the bundled voice), and a
        model that counted it would think the listener has that much more in hand than it has.
        """
        utterance = work.utterance
        assert utterance is not None
        if utterance.words:
            stop = min(stop, utterance.words[-1].end_frame + TAIL_FRAMES)
        frames = stop - start - (work.splice if not work.started else 0)
        seconds = self._frames_s(work, max(0, frames))
        if seconds <= 0:
            return
        self.rendered_s += seconds
        if self.first_audio_at is None or self._out_of_audio(now):
            # A new run: the listener starts playing this audio as it arrives.
            self.first_audio_at = now
            self.audio_s = 0.0
        self.fresh_since = None
        self.audio_s += seconds

    def _frames_for(self, work: Work, seconds: float) -> int:
        utterance = work.utterance
        assert utterance is not None
        frames = int(seconds * utterance.sample_rate / utterance.samples_per_frame) + 1
        return min(self._policy.max_frames, frames)

    def _frames_s(self, work: Work, frames: int) -> float:
        utterance = work.utterance
        assert utterance is not None
        return frames * utterance.samples_per_frame / utterance.sample_rate

    def playback_end(self) -> float | None:
        if self.first_audio_at is None:
            return None
        return self.first_audio_at + self.audio_s

    def _out_of_audio(self, now: float) -> bool:
        end = self.playback_end()
        return end is None or end <= now


def _lead_in(utterance: Utterance) -> int:
    """Where rendering an utterance from its start begins: just before its first word."""
    if not utterance.words:
        return 0
    return max(0, utterance.words[0].start_frame - LEAD_IN_FRAMES)


_EMPTY: FloatArray = np.zeros(0, dtype=np.float32)
