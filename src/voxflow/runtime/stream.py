"""One stream's state in the scheduler: its queued work, its listener's playback clock, the
deadlines of its next jobs and what their results mean.

Pure bookkeeping, driven by ``Scheduler`` under its lock: nothing here blocks or runs a job.

A stream has two *lanes* (``voxflow.runtime.work``): the main lane prepares and renders the queue
in order, the ahead lane prepares a takeover beside its lead's windows.

Deadlines (the scheduler runs the job with the earliest one):

* a stream with no audio in hand (nothing produced yet in this run, or its listener has heard
  everything): ``fresh_since + first_audio_s``. The anchor stays put from the run's first job to
  its first audio, so a stream's first window comes before later arrivals' text stages;
* a stream with audio in hand: the moment its listener would run out, less the job's estimated
  cost and a safety margin;
* a takeover's text stage: the moment the lead's audio would run out, less its own cost.

A stream waits (its *release* time is in the future) while it is more than ``max_lead_s`` ahead
of its listener; an unpaced stream (a whole-text HTTP request) never waits for that.

A stream that owes audio (it has work queued) is never quiet for long, however much its listener
has in hand: its next job is released, and due, in time for its audio to go out within
``max_quiet_s`` of its last audio, or of when it came to owe some (``quiet_since``). A client
framework may take a quiet stream for a finished one (Pipecat's TTS services end a context
after 3 s without audio and drop what comes later).

A lead whose takeover is not prepared yet is rendered sparingly (``voxflow.runtime.leads`` has
the rule and where the takeover then switches in). A lead whose takeover is queued behind it
before any of it was rendered, while its listener holds enough audio for the takeover's own
text stage and first window, is skipped (``Skipped``): the takeover speaks the whole sentence,
and the lead's windows, which nobody would hear, are never rendered. So is any lead whose
takeover is prepared before anything of it was rendered: once its listener has audio in hand, a
takeover's text stage does not wait for its lead's first window.

A work whose windows are cut from a phrase cache hit (``Work.cached``) costs no worker time: its
first window is short (what the listener waits for is its encoding), the rest follow shortly
after. What the cache keeps per work is the cache's (``voxflow.runtime.cache.stage``); a stream
tells ``retired`` of each work that leaves its queue, so that such state ends with the work.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

import numpy as np

from voxflow.engines.base import FloatArray, Utterance
from voxflow.runtime.costs import CostModel
from voxflow.runtime.handover import lead_in
from voxflow.runtime.jobs import (
    Drained,
    Failed,
    Prepared,
    Rendered,
    SchedulerEvent,
    SegmentRequest,
    Sink,
    Skipped,
)
from voxflow.runtime.leads import (
    LEAD_URGENT_S,
    hold_frame,
    start_after_finished_lead,
    switch_from_lead,
)
from voxflow.runtime.windows import WindowPolicy
from voxflow.runtime.work import Job, Lane, Timing, Work

__all__ = ["StreamState"]

# How long before its lead would run out a takeover's text stage should be done: the takeover's
# first window must follow, and on a loaded machine a job takes longer than alone.
AHEAD_MARGIN_S = 0.1
# A burst (what a client's decoder reads before it plays, ``burst_s``) goes out in one window
# of up to this many frames (3 s on the bundled voice), larger than the window policy allows.
BURST_MAX_FRAMES = 256
TAIL_FRAMES = 2  # of the silence after an utterance's last word, what the seam joiner keeps
# A phrase cache hit's first window (70 ms on the bundled voice): it costs nothing to cut, and
# what the listener waits for is its resampling and encoding, which grow with its length. The
# next windows follow at once.
HIT_FIRST_FRAMES = 6
# ...and the rest of it waits this long after the first window: it costs nothing to cut, and its
# events, released at once, would reach the event loop ahead of the first window's encoded
# audio (the first window holds 70 ms for the listener).
HIT_REST_AFTER_S = 0.01
# Of ``max_quiet_s``, what a job's audio needs after the job to reach the wire: its encoding (MP3,
# the slowest codec, takes 40 ms for a 1.5 s window), the event loop's turn, and a job slowed by
# the other jobs on a busy machine.
QUIET_MARGIN_S = 0.25


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
        retired: Callable[[Work], None] | None = None,
        max_quiet_s: float | None = None,
    ) -> None:
        """``retired``: told of each work that leaves the queue (rendered to its end, skipped,
        failed or cancelled); ``max_quiet_s``: the longest a stream that owes audio goes without
        sending some (None: no bound)."""
        self.id = stream_id
        self.sink = sink
        self.paced = paced
        self._policy = policy
        self._costs = costs
        self._first_audio_s = first_audio_s
        self._max_lead_s = max_lead_s
        # An engine's own hold, where it needs more than the scheduler's.
        self._lead_hold_s = lead_hold_s if costs.lead_hold_s is None else costs.lead_hold_s
        self._burst_s = burst_s
        self._retired = retired
        self._max_quiet_s = max_quiet_s
        self.rendered_s = 0.0  # audio rendered so far, all runs
        # CPU its jobs took until it had rendered its first ``START_AUDIO_S`` of audio (None:
        # counted, or not measurable: a phrase cache hit's windows cost nothing).
        self.start_cpu_s: float | None = 0.0
        self.first_audio_cpu_s = 0.0  # CPU its jobs took on the way to its first audio (this run)
        self.works: deque[Work] = deque()
        self.busy: set[Lane] = set()
        self.versions = {Lane.MAIN: 0, Lane.AHEAD: 0}  # invalidates queued heap entries
        # Since when each lane has had a job it could run and has not been given a worker (None:
        # it has none, or it is running one): what a job's wait is measured from (its release,
        # if later; ``voxflow.runtime.slack``).
        self.runnable_since: dict[Lane, float | None] = {Lane.MAIN: None, Lane.AHEAD: None}
        self.cancelled = False
        self.held = False  # its owner asked it to render nothing for now (a full outbox)
        self.input_closed = False
        self.drained_sent = False
        self.fresh_since: float | None = None
        self.first_audio_at: float | None = None
        self.audio_s = 0.0
        self.window = 0
        self.inflight_end: int | None = None  # end frame of the head's render job in flight
        self.finished_lead: Work | None = None  # a lead rendered to its end, for a late takeover
        # Its last window, or when it came to owe audio after owing none: what the quiet bound
        # counts from (None: it never owed any).
        self.quiet_since: float | None = None

    # -- queue ---------------------------------------------------------------------------------

    @property
    def costs(self) -> CostModel:
        """The cost model of the engine this stream speaks with."""
        return self._costs

    def submit(self, request: SegmentRequest, now: float) -> list[SchedulerEvent]:
        """Queue ``request``; the events due now (a lead it makes needless is ``Skipped``)."""
        if not self.works:
            self.quiet_since = now  # it owed nothing until now
        self.works.append(Work(request))
        if self.fresh_since is None and self._out_of_audio(now):
            self.fresh_since = now
        return self._skip_needless_lead(now)

    def cancel(self) -> None:
        self.cancelled = True
        works = list(self.works)
        self.works.clear()
        self.finished_lead = None
        for work in works:
            self._retire(work)

    def has_work(self) -> bool:
        return bool(self.works)

    def queued(self, work: Work) -> bool:
        """Whether ``work`` is still in the queue (not rendered to its end, failed or
        cancelled)."""
        return not self.cancelled and work in self.works

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
        if self.cancelled or self.held or lane in self.busy or not self.works:
            return None
        head = self.works[0]
        if lane is Lane.MAIN:
            if head.utterance is None:
                return None if head.preparing else head
            return head if head.next < head.end else None
        if len(self.works) < 2 or head.decided:
            return None
        if not head.started and (self.fresh_since is not None or self.playback_end() is None):
            # On the way to first audio a takeover's text stage waits for its lead's first
            # window: the lead has the machine to itself (and may use every core for it).
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

    def fresh(self, now: float) -> bool:
        """Whether the stream is on its way to first audio: it has none in hand."""
        return self.fresh_since is not None or self.playback_end() is None

    def timing(self, lane: Lane, work: Work, now: float) -> Timing:
        end = self.playback_end()
        if lane is Lane.AHEAD:
            lead = self.works[0]
            left = 1.0 if lead.utterance is None else self._frames_s(lead, lead.end - lead.next)
            base = now if end is None or end < now else end
            cost = self._costs.prepare_s(work.request.read_chars) + self._costs.render_s(16)
            deadline = base + left - cost - AHEAD_MARGIN_S
            if self._costs.wide_windows:
                # An engine that needs both cores to keep up (Kokoro): the takeover's text
                # stage waits until it is due, rather than take a core from the lead's windows
                # while the listener has little in hand.
                return Timing(max(now, deadline - cost), deadline)
            return Timing(now, deadline)
        if self.fresh_since is not None or end is None:
            anchor = self.fresh_since if self.fresh_since is not None else now
            return Timing(now, anchor + self._first_audio_s)
        if work.utterance is None:
            cost = self._costs.prepare_s(work.request.read_chars)
        else:
            cost = self._costs.render_s(
                self._policy.size(self.window, end - now, self._costs.render_s)
            )
        release = end - self._max_lead_s if self.paced else now
        if work.cached and self.first_audio_at is not None:
            release = max(release, self.first_audio_at + HIT_REST_AFTER_S)
        if self._held(work):
            release = max(release, end - self._lead_hold_s)
            if work.next >= self._hold_frame(work):
                release = max(release, end - LEAD_URGENT_S)
        deadline = end - cost - 0.03
        if self._max_quiet_s is not None and self.quiet_since is not None:
            if work.utterance is None:
                # A text stage sends nothing: the window after it must fit in the bound too.
                cost += self._costs.render_s(self._policy.later_frames)
            quiet = self.quiet_since + self._max_quiet_s - cost - QUIET_MARGIN_S
            release, deadline = min(release, quiet), min(deadline, quiet)
        return Timing(release, deadline)

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
        if (self.window == 0 or end is None) and self._costs.first_frames is not None:
            size = self._costs.first_frames  # this engine's first window
        elif (
            self._costs.wide_windows and end is not None and self._costs.render_s(size) > end - now
        ):
            # An engine about as slow as real time (Kokoro) with little in hand: a window as
            # small as the first arrives in time where the usual floor would not.
            size = min(size, self._policy.first_frames)
        limit = work.end
        if 0 < self.rendered_s < self._burst_s:
            # The rest of the burst in one window (after a small first one): the client's
            # decoder starts once it has all of it, so neither less nor more.
            rest = self._frames_for(work, self._burst_s - self.rendered_s)
            size = max(self._policy.later_frames, rest)
        if work.cached and not work.started:
            if self.rendered_s < self._burst_s:
                # The client's decoder reads the whole burst before it plays: all of it at once.
                size = self._frames_for(work, self._burst_s - self.rendered_s)
            else:
                size = min(size, HIT_FIRST_FRAMES)
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
        return hold_frame(work, self._policy.first_frames)

    # -- results ------------------------------------------------------------------------------

    def prepared(
        self, job: Job, utterance: Utterance, compute_s: float, now: float, cached: bool = False
    ) -> list[SchedulerEvent]:
        """``cached``: the utterance is a phrase cache hit's, whose windows are cut from it."""
        self.busy.discard(job.lane)
        work = job.work
        work.preparing = False
        if not self.queued(work):
            return []
        work.utterance = utterance
        work.cached = cached
        work.end = utterance.num_frames
        work.start = work.next = lead_in(utterance)
        events: list[SchedulerEvent] = [
            Prepared(work.request.tag, utterance, compute_s, cached=cached)
        ]
        if work.request.takeover is not None:
            events += self._decide(work)
        return events + self._finish_if_done(now)

    def rendered(
        self, job: Job, audio: FloatArray, compute_s: float, now: float
    ) -> list[SchedulerEvent]:
        self.busy.discard(job.lane)
        self.inflight_end = None
        work = job.work
        assert job.window is not None and work.utterance is not None
        if not self.queued(work):
            return []
        start, stop = job.window
        late = 0.0
        if job.playback_end is not None and now > job.playback_end:
            late = now - job.playback_end
        self._played(work, start, stop, now)
        if stop > start:
            self.quiet_since = now
        work.next = stop
        events: list[SchedulerEvent] = [self._window(work, start, stop, audio, compute_s, late)]
        return events + self._finish_if_done(now)

    def failed(self, job: Job, error: Exception) -> list[SchedulerEvent]:
        self.busy.discard(job.lane)
        self.inflight_end = None
        work = job.work
        work.preparing = False
        if not self.queued(work):
            return []
        self.works.remove(work)
        self._retire(work)
        return [Failed(work.request.tag, error)]

    # -- internals -------------------------------------------------------------------------------

    def _skip_needless_lead(self, now: float) -> list[SchedulerEvent]:
        """Skip the head lead when nothing of it has been rendered, its takeover is queued
        behind it, and the listener holds enough audio for the takeover's text stage and first
        window and ``lead_hold_s`` besides: the takeover's first audio then comes before the
        lead would even have been released, so the lead would only be rendered to be replaced.
        A lead with no audio in hand before it (a turn's first words) is what first audio
        waits for, and is kept."""
        if len(self.works) < 2:
            return []
        lead, follower = self.works[0], self.works[1]
        takeover = follower.request.takeover
        if (
            not lead.request.lead
            or not self._untouched(lead)
            or takeover is None
            or takeover.lead_tag != lead.request.tag
            or follower.utterance is not None
            or follower.preparing
        ):
            return []
        end = self.playback_end()
        if end is None or self.fresh_since is not None:
            return []
        first = self._costs.first_frames or self._policy.first_frames
        need = (
            self._costs.prepare_s(follower.request.read_chars)
            + self._costs.render_s(first)
            + self._lead_hold_s
        )
        if end - now < need:
            return []
        return self._skip_lead()

    def _untouched(self, lead: Work) -> bool:
        """Whether nothing of ``lead``, the head, is rendered or being rendered (its text stage
        may be running)."""
        return not lead.started and self.inflight_end is None

    def _skip_lead(self) -> list[SchedulerEvent]:
        """Drop the head lead, of which nothing is rendered or being rendered (a text stage of
        it still running is discarded when it ends)."""
        lead = self.works.popleft()
        self._retire(lead)
        return [Skipped(lead.request.tag)]

    def _decide(self, takeover_work: Work) -> list[SchedulerEvent]:
        """Choose where ``takeover_work`` (prepared) takes over from its lead: from its start
        when nothing of the lead is rendered or being rendered (the lead is ``Skipped``)."""
        takeover = takeover_work.request.takeover
        assert takeover is not None and takeover_work.utterance is not None
        lead = self.works[0] if self.works[0] is not takeover_work else None
        if lead is None or lead.request.tag != takeover.lead_tag:
            finished, self.finished_lead = self.finished_lead, None
            start_after_finished_lead(takeover_work, finished)
            return []
        if self._untouched(lead):
            return self._skip_lead()
        rendered = self.inflight_end if self.inflight_end is not None else lead.next
        switch_from_lead(lead, takeover_work, rendered)
        return []

    def _finish_if_done(self, now: float) -> list[SchedulerEvent]:
        """Pop finished works at the head; a work cut where it already was ends with an empty
        last window; a work with no frames ends with one too. A lead that comes to the head
        needless is skipped."""
        events: list[SchedulerEvent] = []
        while self.works and Lane.MAIN not in self.busy:
            head = self.works[0]
            if head.utterance is None or head.next < head.end:
                break
            if not head.ended:
                events.append(self._window(head, head.next, head.next, _EMPTY, 0.0, 0.0))
            self.works.popleft()
            self._retire(head)
            if head.request.lead and not head.decided:
                self.finished_lead = head
        return events + self._skip_needless_lead(now)

    def _retire(self, work: Work) -> None:
        if self._retired is not None:
            self._retired(work)

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
        """Frames of ``work`` that hold ``seconds`` of audio (a burst: at most
        ``BURST_MAX_FRAMES``, whatever the window policy's largest window)."""
        utterance = work.utterance
        assert utterance is not None
        frames = int(seconds * utterance.sample_rate / utterance.samples_per_frame) + 1
        return min(BURST_MAX_FRAMES, frames)

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


_EMPTY: FloatArray = np.zeros(0, dtype=np.float32)
