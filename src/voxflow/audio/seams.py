"""Seams between the segments of one stream: trim each segment's silence, insert a set pause.

Every segment is a separate utterance to the engine, and a Piper voice frames each utterance in
silence (about 50 ms before the speech and 110-200 ms after it for the bundled voice), so segments
played back to back leave a 160-250 ms hole at every join, even where the text was cut between two
words of one sentence. A ``SeamJoiner`` sits between the engine's windows and the encoder and, per
segment:

* drops the leading silence, keeping ``lead_keep_ms`` before the first frame of speech;
* drops the trailing silence, keeping ``tail_keep_ms`` after the last frame of speech;
* puts silence before each segment's speech so that the gap from the previous segment's last
  frame of speech to this one's first is the pause of the boundary between them (a ``JoinKind``:
  sentence, clause, word or flush, see ``SeamSettings``), or the kept margins where those are
  longer;
* fades (raised cosine, ``fade_ms``) the first and last samples it keeps. The margins are at
  least a fade long, so a fade only ever lands on speech where the engine's audio itself starts
  or ends without silence (a waveform cut at a non-silent point).

A frame of speech is a ``frame_ms`` frame, on a grid that starts at the segment's first sample,
whose mean square exceeds ``silence_db`` dBFS. Everything from the first frame of speech to the
last (pauses inside the segment included) passes through unchanged, sample for sample.

Streaming: the joiner sees a segment one window at a time. Leading silence is dropped as it
arrives, so it removes latency rather than adding any. At the end of a window it holds back the
last ``fade_ms`` (the fade-out needs them if the segment ends there) plus any silence that may turn
out to be the segment's trailing silence, but never more than ``max_hold_ms``; once the window
marked ``last`` arrives, the segment's end is known and everything is released. The output does
not depend on how a segment is cut into windows, with one exception: a window that ends more
than ``tail_keep_ms + max_hold_ms - fade_ms`` into the segment's trailing silence forces out some
of that silence before the segment's end is known. The pause that follows is then shortened by
the same amount (the gap from speech to speech stays the same wherever the pause is at least that
long); only word joins, which have no pause to absorb it, come out longer.

Timeline: trimming moves the segment's audio on the output timeline. ``SeamJoiner.segment_map``
gives, once the segment's speech has started, the ``SegmentMap`` from the segment's own sample
positions (those of the engine's frames: ``frame * samples_per_frame``) to positions on the
joiner's output. The session must time words with it, not with a count of rendered samples:

1. per segment, call ``start_segment(previous segment's JoinKind)`` before its first window
   (None for the stream's first segment);
2. pass every window through ``window(audio, last)`` and encode what it returns; the output
   timeline is ``output_samples`` (it replaces a count of rendered samples);
3. after the first call that makes ``segment_map`` non-None, send the segment's word timings as
   ``map.to_output(word.start_frame * spf)`` and ``map.to_output(word.end_frame * spf)`` (divided
   by the sample rate), before the audio of that call; a segment whose map stays None after its
   ``last`` window was silent and has no audio to time its words against. The map's end is not
   known yet at that point, so a word end inside the trailing silence that is later trimmed maps
   a few milliseconds into the pause after the segment;
4. call ``flush()`` when the stream is cut off (cancel or barge-in), and before a segment that
   follows audio the client has already finished playing (the silence is already there in real
   time; a pause would only delay the new speech): it releases a half-finished segment, faded
   out, and the next segment then starts with no pause, as at the stream's start.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from voxflow.audio.fades import rising
from voxflow.audio.seam_settings import JoinKind, SeamSettings

__all__ = ["SeamJoiner", "SegmentMap"]

FloatArray = npt.NDArray[np.float32]

_EMPTY: FloatArray = np.zeros(0, dtype=np.float32)


@dataclass(frozen=True)
class SegmentMap:
    """Where one segment's samples landed on the joiner's output timeline.

    Segment sample ``source_start`` is output sample ``output_start``, and the samples after it
    follow one for one up to ``source_end`` (exclusive; None until the segment's last window has
    been joined). Positions in the trimmed lead map to the segment's first output sample, those in
    the trimmed tail to just past its last.
    """

    source_start: int
    output_start: int
    source_end: int | None = None

    def to_output(self, source_sample: int) -> int:
        position = max(source_sample, self.source_start)
        if self.source_end is not None:
            position = min(position, self.source_end)
        return self.output_start + position - self.source_start

    @property
    def output_end(self) -> int | None:
        """One past the segment's last output sample, once known."""
        return None if self.source_end is None else self.to_output(self.source_end)


class SeamJoiner:
    """Joins the segments of one stream (see the module docstring). Not thread-safe."""

    def __init__(self, sample_rate: int, settings: SeamSettings | None = None) -> None:
        if sample_rate <= 0:
            raise ValueError(f"sample_rate must be > 0, got {sample_rate}")
        self._rate = sample_rate
        self._settings = settings or SeamSettings()
        s = self._settings
        self._frame = max(1, self._samples(s.frame_ms))
        self._fade = self._samples(s.fade_ms)
        self._lead_keep = self._samples(s.lead_keep_ms)
        self._tail_keep = self._samples(s.tail_keep_ms)
        self._max_hold = self._samples(s.max_hold_ms)
        self._threshold = 10.0 ** (s.silence_db / 10.0)  # on the mean square of a frame
        self._output = 0  # samples returned (or queued to be returned) so far
        self._queued: list[FloatArray] = []  # released by an implicit end of a segment
        # Kept samples after the last speech of the previous audible segment; None when there is
        # none (start of the stream, or after a flush), so that no pause is put before the first.
        self._previous_tail: int | None = None
        self._carried_pause = 0  # the pause owed before a segment that turned out silent
        self._open = False
        self._map: SegmentMap | None = None
        # The open segment (see _reset_segment for what each field means).
        self._pause = 0
        self._buf: FloatArray = _EMPTY
        self._base = 0
        self._received = 0
        self._classified = 0
        self._onset: int | None = None
        self._voiced_end = 0
        self._start: int | None = None
        self._emitted = 0

    # -- public API ------------------------------------------------------------------------------

    @property
    def sample_rate(self) -> int:
        return self._rate

    @property
    def settings(self) -> SeamSettings:
        return self._settings

    @property
    def output_samples(self) -> int:
        """Samples on the output timeline so far (all that ``window``/``flush`` returned)."""
        return self._output

    @property
    def latency_samples(self) -> int:
        """Samples of the open segment received but neither returned nor dropped yet.

        Never more than ``max_hold_ms`` after a ``window`` call (and 0 after the last window).
        """
        if not self._open:
            return 0
        if self._start is None:
            return self._received - self._base
        return self._received - self._emitted

    @property
    def segment_map(self) -> SegmentMap | None:
        """The current (or, after its last window, the latest) segment's map; None before its
        speech has started, and for a segment that was silent throughout."""
        return self._map

    def start_segment(
        self, boundary_before: JoinKind | None, keep_until: int = 0, pause_ms: float | None = None
    ) -> None:
        """Begin a segment. ``boundary_before`` is how the previous segment of the stream ended
        (the caller maps its ``Segment.boundary`` to a ``JoinKind``); None means no pause (as for
        the stream's first segment).
        ``keep_until`` (a sample of the segment) is never trimmed away: the caller passes the end
        of the segment's last word, which can lie in silence (an unreleased final stop, as in
        "sharp"), so that every word it times ends inside the audio it sends.

        ``pause_ms`` replaces the boundary's pause (an SSML break, a context's own pause after a
        sentence); unlike a boundary's, it is put before the stream's first speech too.

        A segment still open (its last window never came, e.g. it failed) is ended here as if its
        last window had been empty; what that releases comes out with the next ``window`` call.
        """
        if self._open:
            released = self._finish()
            if len(released):
                self._queued.append(released)
        pause = 0
        if pause_ms is not None and pause_ms > 0 and self._previous_tail is None:
            self._previous_tail = 0  # silence before the stream's first speech
        if self._previous_tail is not None:
            wanted = self._settings.pause_ms(boundary_before) if pause_ms is None else pause_ms
            pause = max(self._carried_pause, self._samples(wanted))
        self._reset_segment(pause)
        self._keep_until = max(0, keep_until)
        self._open = True
        self._map = None

    def keep_until(self, sample: int) -> None:
        """Extend the open segment's ``keep_until`` (see ``start_segment``): a takeover spliced
        onto a lead makes the segment longer than the lead's words said."""
        if self._open:
            self._keep_until = max(self._keep_until, sample)

    def window(self, audio: FloatArray, last: bool) -> FloatArray:
        """Take the segment's next window; return the audio that is ready to send now."""
        if not self._open:
            raise RuntimeError("window() called outside a segment: call start_segment() first")
        # A copy: the buffer outlives the call and the caller may reuse its array.
        samples = np.array(audio, dtype=np.float32).reshape(-1)
        if len(samples):
            self._buf = np.concatenate([self._buf, samples]) if len(self._buf) else samples
            self._received += len(samples)
        if last:
            return self._finish()
        self._classify(final=False)
        if self._start is not None or self._find_start():
            released = self._release_safe()
        else:
            self._drop_leading_silence()
            released = _EMPTY
        # Queued audio (an earlier segment's end, the pause) goes out before this window's.
        return _concat([*self._take_queued(), released])

    def flush(self) -> FloatArray:
        """End the stream: release an unfinished segment (trimmed and faded out as if it ended
        here) and forget the last boundary, so the next segment starts with no pause."""
        parts = self._take_queued()
        if self._open:
            parts.append(self._finish())
        self._previous_tail = None
        self._carried_pause = 0
        return _concat(parts)

    # -- per-segment state -----------------------------------------------------------------------

    def _reset_segment(self, pause: int) -> None:
        self._pause = pause  # speech-to-speech gap owed before this segment's speech
        self._buf = _EMPTY  # segment samples [base, received)
        self._base = 0
        self._received = 0
        self._classified = 0  # frames [0, classified) classified
        self._onset = None  # first sample of the first frame of speech
        self._voiced_end = 0  # one past the last frame of speech seen so far
        self._start = None  # first kept sample, fixed once speech starts
        self._emitted = 0  # kept samples [start, emitted) already output
        self._keep_until = 0  # samples before this are kept even if they are trailing silence

    def _classify(self, final: bool) -> None:
        """Classify the complete frames received (and on ``final`` the partial one at the end)."""
        frame = self._frame
        complete = self._received // frame - self._classified
        if complete > 0:
            lo = self._classified * frame - self._base
            block = (
                self._buf[lo : lo + complete * frame].astype(np.float64).reshape(complete, frame)
            )
            voiced = np.flatnonzero(np.mean(block * block, axis=1) > self._threshold)
            if len(voiced):
                if self._onset is None:
                    self._onset = (self._classified + int(voiced[0])) * frame
                self._voiced_end = (self._classified + int(voiced[-1]) + 1) * frame
            self._classified += complete
        tail_start = self._classified * frame
        if final and self._received > tail_start:
            rest = self._buf[tail_start - self._base :].astype(np.float64)
            if float(np.mean(rest * rest)) > self._threshold:
                if self._onset is None:
                    self._onset = tail_start
                self._voiced_end = self._received

    def _find_start(self) -> bool:
        """Fix the segment's first kept sample once speech has started, and emit the pause."""
        if self._onset is None:
            return False
        start = max(self._base, self._onset - self._lead_keep)
        lead = self._onset - start
        zeros = 0
        if self._previous_tail is not None:
            zeros = max(0, self._pause - self._previous_tail - lead)
        if zeros:
            self._queued.append(np.zeros(zeros, dtype=np.float32))
            self._output += zeros
        self._start = start
        self._emitted = start
        self._map = SegmentMap(source_start=start, output_start=self._output)
        return True

    def _drop_leading_silence(self) -> None:
        """Before speech: keep only what the lead margin and the unclassified frame may need."""
        keep_from = max(self._base, self._classified * self._frame - self._lead_keep)
        self._buf = self._buf[keep_from - self._base :]
        self._base = keep_from

    def _release_safe(self) -> FloatArray:
        """Output the kept samples that no later window can change."""
        # Everything up to tail_keep past the last speech is kept whatever comes next; the last
        # fade's worth stays back in case the segment ends there. Silence beyond that is held
        # while it could still be the trailing silence, up to the hold limit.
        certain = max(self._voiced_end + self._tail_keep, self._keep_until) - self._fade
        safe = min(self._received - self._fade, max(certain, self._received - self._max_hold))
        out = self._emit(max(self._emitted, safe), fade_out_end=None)
        # Unclassified samples must stay in the buffer even when they were already output.
        keep_from = min(self._emitted, self._classified * self._frame)
        self._buf = self._buf[keep_from - self._base :]
        self._base = keep_from
        return out

    def _finish(self) -> FloatArray:
        """End the open segment: classify what is left, trim its tail, release everything."""
        self._classify(final=True)
        self._open = False
        if self._start is None and not self._find_start():
            # Silent throughout: nothing to play; the pause owed still applies to the next one.
            self._carried_pause = self._pause
            self._buf = _EMPTY
            return self._take_queued_concat()
        end = min(
            self._received,
            max(self._voiced_end + self._tail_keep, self._keep_until, self._emitted + self._fade),
        )
        out = _concat([*self._take_queued(), self._emit(end, fade_out_end=end)])
        self._previous_tail = end - self._voiced_end
        self._carried_pause = 0
        if self._map is not None:
            self._map = dataclasses.replace(self._map, source_end=end)
        self._buf = _EMPTY
        return out

    def _emit(self, upto: int, fade_out_end: int | None) -> FloatArray:
        """Output kept samples ``[emitted, upto)`` with the fades that fall on them."""
        start = self._start if self._start is not None else 0
        lo = self._emitted
        if upto <= lo:
            return _EMPTY
        chunk = self._buf[lo - self._base : upto - self._base].astype(np.float32, copy=True)
        fade = self._fade
        if fade:
            index = np.arange(lo, upto)
            gain = np.ones(upto - lo, dtype=np.float64)
            fading_in = index < start + fade
            if fading_in.any():
                gain[fading_in] *= rising(index[fading_in] - start, fade)
            if fade_out_end is not None:
                fading_out = index >= fade_out_end - fade
                gain[fading_out] *= rising(fade_out_end - 1 - index[fading_out], fade)
            chunk *= gain.astype(np.float32)
        self._emitted = upto
        self._output += len(chunk)
        return chunk

    def _take_queued(self) -> list[FloatArray]:
        parts, self._queued = self._queued, []
        return parts

    def _take_queued_concat(self) -> FloatArray:
        return _concat(self._take_queued())

    def _samples(self, ms: float) -> int:
        return round(ms * self._rate / 1000.0)


def _concat(parts: list[FloatArray]) -> FloatArray:
    parts = [p for p in parts if len(p)]
    if not parts:
        return _EMPTY.copy()
    if len(parts) == 1:
        return parts[0]
    return np.concatenate(parts).astype(np.float32, copy=False)
