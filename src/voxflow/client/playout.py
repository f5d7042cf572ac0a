"""A model of a client's audio player: jitter buffer, real-time playback clock and underruns.

Pure logic with injected times, so it runs the same on live arrivals (``time.monotonic()``) and on
synthetic timings in tests. The model:

* playback starts once ``start_buffer_ms`` of audio has arrived, or when the caller says no more
  audio is coming for now (``mark_end``), whichever is first;
* from then on audio plays in real time, chunk after chunk, without gaps while audio is in hand;
* a chunk that arrives after everything before it has finished playing is an *underrun*: the
  listener heard silence from the moment the audio ran out until the chunk arrived, and playback
  resumes from that arrival (the rest of the schedule shifts by the gap; there is no re-buffering).
"""

from __future__ import annotations

from dataclasses import dataclass

# Arrival times are floats from one clock; a chunk that lands within a nanosecond of the moment the
# audio ran out is on time, not an underrun of zero length.
_EPSILON_S = 1e-9


@dataclass(frozen=True)
class PlayoutStats:
    """What a listener experienced, as of the last chunk fed to the buffer."""

    start_buffer_ms: float
    received_ms: float
    chunks: int
    started_at: float | None  # when playback began (None: not yet)
    finish_at: float | None  # when the audio received so far will have finished playing
    underruns: int
    underrun_ms: float
    longest_underrun_ms: float = 0.0

    def as_dict(self) -> dict[str, object]:
        return {
            "start_buffer_ms": self.start_buffer_ms,
            "received_ms": round(self.received_ms, 3),
            "chunks": self.chunks,
            "underruns": self.underruns,
            "underrun_ms": round(self.underrun_ms, 3),
            "longest_underrun_ms": round(self.longest_underrun_ms, 3),
        }


class PlayoutBuffer:
    """Feed chunks in arrival order with ``add``; read the playback clock with ``played_ms``."""

    def __init__(self, start_buffer_ms: float = 150.0) -> None:
        if start_buffer_ms < 0:
            raise ValueError(f"start_buffer_ms must be >= 0, got {start_buffer_ms}")
        self._start_buffer_ms = start_buffer_ms
        self._received_ms = 0.0
        self._chunks = 0
        self._last_time: float | None = None
        # Stretches of gapless playback as [wall-clock start in s, audio in ms]; a new one begins
        # at every underrun. played_ms() sums over them, so it stays exact across the gaps.
        self._runs: list[list[float]] = []
        self._underruns = 0
        self._underrun_ms = 0.0
        self._longest_underrun_ms = 0.0
        self._underrun_spans: list[tuple[float, float]] = []

    # -- input ---------------------------------------------------------------------------------

    def add(self, arrival_s: float, duration_ms: float) -> None:
        """A chunk of ``duration_ms`` of audio arrived at ``arrival_s`` (times must not go back)."""
        if duration_ms < 0:
            raise ValueError(f"duration_ms must be >= 0, got {duration_ms}")
        self._advance(arrival_s)
        self._received_ms += duration_ms
        self._chunks += 1
        if not self._runs:
            if self._received_ms >= self._start_buffer_ms:
                self._runs.append([arrival_s, self._received_ms])
            return
        run = self._runs[-1]
        run_end_s = run[0] + run[1] / 1000.0
        if arrival_s > run_end_s + _EPSILON_S:
            gap_ms = 1000.0 * (arrival_s - run_end_s)
            self._underruns += 1
            self._underrun_ms += gap_ms
            self._longest_underrun_ms = max(self._longest_underrun_ms, gap_ms)
            self._underrun_spans.append((run_end_s, arrival_s))
            self._runs.append([arrival_s, duration_ms])
        else:
            run[1] += duration_ms

    def mark_end(self, at_s: float) -> None:
        """No more audio is coming for now (the stream ended or was flushed).

        A player waiting to fill its start buffer starts at ``at_s`` with what it has rather than
        wait for audio that will not come. Later ``add`` calls are still accepted.
        """
        self._advance(at_s)
        if not self._runs and self._received_ms > 0:
            self._runs.append([at_s, self._received_ms])

    def _advance(self, at_s: float) -> None:
        if self._last_time is not None and at_s < self._last_time:
            raise ValueError(f"time went backwards: {at_s} < {self._last_time}")
        self._last_time = at_s

    # -- read-outs -----------------------------------------------------------------------------

    @property
    def start_buffer_ms(self) -> float:
        return self._start_buffer_ms

    @property
    def received_ms(self) -> float:
        return self._received_ms

    @property
    def started_at(self) -> float | None:
        return self._runs[0][0] if self._runs else None

    @property
    def finish_at(self) -> float | None:
        """When the audio received so far will have finished playing (None: not started)."""
        if not self._runs:
            return None
        start_s, audio_ms = self._runs[-1]
        return start_s + audio_ms / 1000.0

    @property
    def underruns(self) -> int:
        return self._underruns

    @property
    def underrun_ms(self) -> float:
        return self._underrun_ms

    @property
    def longest_underrun_ms(self) -> float:
        return self._longest_underrun_ms

    @property
    def underrun_spans(self) -> tuple[tuple[float, float], ...]:
        """Each underrun's silence: from when the audio ran out to when the next chunk came."""
        return tuple(self._underrun_spans)

    def played_ms(self, now_s: float) -> float:
        """Audio played by ``now_s``: what a client reports as ``played_ms`` when it barges in.

        Only chunks already fed count, so ask with ``now_s`` no earlier than the last arrival.
        """
        played = 0.0
        for start_s, audio_ms in self._runs:
            elapsed_ms = 1000.0 * (now_s - start_s)
            if elapsed_ms <= 0:
                break  # runs are in time order: later ones have not begun either
            played += min(elapsed_ms, audio_ms)
        return played

    def buffered_ms(self, now_s: float) -> float:
        """Audio received but not yet played at ``now_s``."""
        return self._received_ms - self.played_ms(now_s)

    def stats(self) -> PlayoutStats:
        return PlayoutStats(
            start_buffer_ms=self._start_buffer_ms,
            received_ms=self._received_ms,
            chunks=self._chunks,
            started_at=self.started_at,
            finish_at=self.finish_at,
            underruns=self._underruns,
            underrun_ms=self._underrun_ms,
            longest_underrun_ms=self._longest_underrun_ms,
        )
