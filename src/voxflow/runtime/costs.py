"""How long jobs take, learnt as they run: the scheduler's deadlines subtract a job's cost, and
admission counts a speaking stream at what a second of its audio takes.

Two rates suffice for a job: the text stage costs a fixed part plus a part per character of
text, and a render window costs per frame rendered, context frames included. Each rate is an
exponentially weighted average of what jobs really took on this machine, starting from figures
measured on the 2-core dev machine (docs/benchmarks.md), so deadlines follow a slower or busier
machine. ``audio_cost_s`` is the CPU time of all of a stream's jobs (its text stages, its
windows, its leads and their takeovers) per second of the audio rendered, over the last minutes
of audio: what one more speaking stream of the engine will take of the machine.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "KOKORO_AUDIO_COST_S",
    "KOKORO_FIRST_FRAMES",
    "KOKORO_FRAMES_PER_S",
    "PIPER_AUDIO_COST_S",
    "START_AUDIO_S",
    "CostModel",
    "ProcessOverhead",
    "initial_costs",
]

# CPU seconds a second of audio takes in the calls benchmark on the 2-core dev machine
# (docs/benchmarks.md#calls): the bundled Piper voice, and Kokoro with its convolutions on
# int8 weights (0.48 to 0.61 per second heard at 1 to 3 calls while a lone stream rendered
# every window on both cores; 0.39 to 0.48 since it does so only for a late one:
# docs/kokoro.md, *Capacity*). Where to start; learnt from the streams' one-thread jobs (a
# job on both cores teaches nothing of what a second stream beside it will find).
PIPER_AUDIO_COST_S = 0.09
KOKORO_AUDIO_COST_S = 0.6
# Kokoro's first window: 300 ms of audio (24 frames of 12.5 ms), so that the second window,
# rendered beside whatever else the turn's start needs, comes before it has played.
KOKORO_FIRST_FRAMES = 24
KOKORO_FRAMES_PER_S = 80  # 300 samples a frame at 24 kHz
# A turn's first sentence, which the first second's text stages cover (a lead and the rest of
# its sentence): the bundled agent replies' first sentences, 39 / 123 / 162 characters at the
# 10th, 50th and 90th percentile. A start is learnt from then on (``observe_start``).
_FIRST_SENTENCE_CHARS = 120
# ... and how far ahead its leads render while their takeovers are prepared (Piper: 0.3 s).
KOKORO_LEAD_HOLD_S = 0.8

_WEIGHT = 0.1  # of each new observation in the running average
# A stream's first second of audio costs about this many of its later seconds before any is
# measured: its text stages (a lead's and its takeover's) and its small first windows come
# first (in the calls simulation at the bundled voice's measured costs, 0.24 CPU s against
# 0.09). Replaced as streams run (``CostModel.observe_start``).
_START_PRIOR = 2.5
# What ``start_cost_s`` covers: a stream's first second of audio, which its listener plays as
# it comes, so its jobs are due within about a second of its start.
START_AUDIO_S = 1.0
_PRIOR_AUDIO_S = 30.0  # audio_cost_s starts as if measured over this much audio
_AUDIO_MEMORY_S = 240.0  # ... and is measured over about this much: older audio weighs half


@dataclass
class CostModel:
    """Estimated seconds per prepare (``fixed + per_char * chars``) and per rendered frame."""

    prepare_fixed_s: float = 0.008
    prepare_per_char_s: float = 0.0006
    render_per_frame_s: float = 0.0004
    context_frames: int = 20  # decoder context rendered and dropped around every window
    # Whether a job after a stream's first audio may use every core when nothing else runs
    # and one core would deliver it past its deadline: an engine that is not far faster than
    # real time on one core needs it to keep up where its listener has little in hand.
    wide_windows: bool = False
    # Frames of a stream's first window, when this engine needs more than the scheduler's
    # (None: the scheduler's): the audio in hand when the second window starts.
    first_frames: int | None = None
    # How far ahead of its listener a lead waiting for its takeover is rendered, when this
    # engine needs more than the scheduler's ``lead_hold_s`` (None: the scheduler's): the
    # takeover's text stage and first window must fit in it.
    lead_hold_s: float | None = None
    # CPU seconds a second of audio takes, every job of a stream included (measured with the
    # calls benchmark; learnt from then on).
    audio_cost_s: float = 0.1

    # CPU seconds a stream's first ``START_AUDIO_S`` of audio takes, every job until then
    # included (None: ``_START_PRIOR`` x ``audio_cost_s`` until a stream has been measured):
    # what admission counts a stream at while it starts.
    start_cost_s: float | None = None

    def __post_init__(self) -> None:
        if self.start_cost_s is None:
            self.start_cost_s = _START_PRIOR * self.audio_cost_s
        self._work_s = self.audio_cost_s * _PRIOR_AUDIO_S
        self._audio_s = _PRIOR_AUDIO_S
        self.observed_cpu_s = 0.0  # every job's CPU time observed so far (never halved)

    def prepare_s(self, chars: int) -> float:
        return self.prepare_fixed_s + self.prepare_per_char_s * chars

    def render_s(self, frames: int) -> float:
        return self.render_per_frame_s * (frames + self.context_frames)

    def observe_prepare(self, chars: int, seconds: float) -> None:
        if chars > 0:
            rate = max(0.0, seconds - self.prepare_fixed_s) / chars
            self.prepare_per_char_s += _WEIGHT * (rate - self.prepare_per_char_s)

    def observe_render(self, frames: int, seconds: float) -> None:
        if frames > 0:
            rate = seconds / (frames + self.context_frames)
            self.render_per_frame_s += _WEIGHT * (rate - self.render_per_frame_s)

    def observe_elsewhere(self, seconds: float) -> None:
        """A job took about ``seconds`` of CPU that ``audio_cost_s`` does not learn from (one
        on several threads, whose CPU time its own thread does not see): counted as jobs' CPU
        all the same, so that ``ProcessOverhead`` does not take it for overhead."""
        self.observed_cpu_s += seconds

    def observe_start(self, seconds: float) -> None:
        """A stream's first ``START_AUDIO_S`` of audio took ``seconds`` of CPU."""
        start = self.start_cost_s if self.start_cost_s is not None else seconds
        self.start_cost_s = start + _WEIGHT * (seconds - start)

    def observe_work(self, seconds: float, audio_s: float = 0.0) -> None:
        """A job took ``seconds`` of CPU and gave ``audio_s`` of audio (0 for a text stage):
        updates ``audio_cost_s``."""
        self._work_s += seconds
        self._audio_s += audio_s
        self.observed_cpu_s += seconds
        if self._audio_s > _AUDIO_MEMORY_S:
            self._work_s /= 2
            self._audio_s /= 2
        self.audio_cost_s = self._work_s / self._audio_s


@dataclass
class ProcessOverhead:
    """The server process's CPU time over the CPU time of the jobs the cost models learnt from:
    what a second of audio takes beyond its jobs (encoding, the protocols' framing, the event
    loop, the worker threads' other work), as a factor on their ``audio_cost_s``. Measured over
    spans of at least ``min_work_s`` of jobs; a span that sees less in ``max_span_s`` (an idle
    server, whose event loop still ticks) is dropped. Pure: the caller passes both CPU clocks
    and the time."""

    ratio: float = 1.0
    min_work_s: float = 1.0
    max_span_s: float = 30.0
    max_ratio: float = 2.0  # a phrase cache's hits cost encoding and no job: not a new engine

    def __post_init__(self) -> None:
        self._start: tuple[float, float, float] | None = None  # (jobs' CPU, process CPU, time)

    def observe(self, jobs_cpu_s: float, process_cpu_s: float, now: float) -> None:
        start = self._start
        if start is None or now - start[2] > self.max_span_s:
            self._start = (jobs_cpu_s, process_cpu_s, now)
            return
        work = jobs_cpu_s - start[0]
        if work < self.min_work_s:
            return
        measured = min(self.max_ratio, max(1.0, (process_cpu_s - start[1]) / work))
        self.ratio += _OVERHEAD_WEIGHT * (measured - self.ratio)
        self._start = (jobs_cpu_s, process_cpu_s, now)


_OVERHEAD_WEIGHT = 0.2


def initial_costs(engine: str) -> CostModel:
    """A fresh model for ``engine``'s jobs, from its figures on the 2-core dev machine: each
    engine learns its own rates, since a Kokoro frame costs about twenty Piper frames."""
    if engine == "kokoro":
        # The prosody stage and the decoder at one thread (docs/kokoro.md, *Where the time
        # goes*); the decoder's window has 4 frames of context on each side: about 0.4 of
        # real time on one core in the server. A stream alone renders a window that one core
        # would deliver late on both: with every window on one, a lone call's turns had gaps
        # twice as long (docs/kokoro.md, *Capacity*).
        model = CostModel(
            prepare_fixed_s=0.02,
            prepare_per_char_s=0.0012,
            render_per_frame_s=0.0045,
            context_frames=8,
            wide_windows=True,
            first_frames=KOKORO_FIRST_FRAMES,
            lead_hold_s=KOKORO_LEAD_HOLD_S,
            audio_cost_s=KOKORO_AUDIO_COST_S,
        )
        # Its start, until one is measured: no takeover renders its lead again (the factor
        # ``_START_PRIOR`` is Piper's, leads and takeovers), so the first second's jobs are
        # a sentence's text stage and a second of windows, each with its context, at its rates.
        frames = round(START_AUDIO_S * KOKORO_FRAMES_PER_S)
        model.start_cost_s = (
            model.prepare_s(_FIRST_SENTENCE_CHARS)
            + model.render_s(KOKORO_FIRST_FRAMES)
            + model.render_s(frames - KOKORO_FIRST_FRAMES)
        )
        return model
    return CostModel(audio_cost_s=PIPER_AUDIO_COST_S)
