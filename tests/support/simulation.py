"""Calls on a fake clock: the real sessions and scheduling policy, jobs that take measured time.

A discrete-event simulation of the server under the calls benchmark's load, for tests that
must see what many listeners hear without a real machine's noise:

* each call is a real ``Session``; its turns stream a reply as LLM tokens (``stream_tokens``) at a
  given rate, then ``end`` (or, ``Turn.sentences``, each sentence whole and flushed once its
  last token is in, as Pipecat sends them), and the listener plays the audio at real time from
  its first chunk with no buffer (``PlayoutBuffer(0)``): a chunk that arrives after the audio
  before it has played out is a gap. Each chunk's ``quiet_s`` (how long its context sent no
  audio while it owed some) is kept too: a framework ends a context quiet for 3 s;
* the session's commands go to a real ``SchedulingPolicy``; ``workers`` virtual workers take its
  jobs, and ``first_audio_workers`` more take only a stream's first-audio jobs, as the
  scheduler's threads do; a job takes what the engine's costs say (``SimCosts``, measured on
  the 2-core machine with the bundled voice) on ``cores`` shared cores (processor sharing,
  weighted as Linux weighs the threads' nice values: more jobs than cores slow each other down,
  a first-audio job less, a wide job uses up to ``wide_speedup`` cores). ``cores`` may change
  as the run goes (``core_changes``: a neighbour), and the server's cost model may start from
  other figures than the machine's (``model_costs``: a slower CPU than measured);
* admission, when asked for, is the server's (``session.admission``): by a fixed capacity, or
  by one learnt from the policy's slack (``learn``), ticked every second as the server does;
* the engine is a stand-in (``SimEngine``): an utterance has ``frames_per_char`` frames a
  character, its words spread over them, and audio that is a tone where the words are, so the
  seam joiner trims and pauses as it does real speech;
* encoding runs at once, in the session's order (PCM at the voice's rate).

Nothing reads the wall clock; a run is deterministic for its inputs.
"""

from __future__ import annotations

import functools
import heapq
import itertools
import math
import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tests.support.traffic import stream_tokens
from voxflow.client.playout import PlayoutBuffer
from voxflow.engines.base import FloatArray, Utterance, VoiceInfo, WordSpan
from voxflow.runtime.costs import PIPER_AUDIO_COST_S, CostModel
from voxflow.runtime.jobs import SchedulerEvent
from voxflow.runtime.policy import SchedulingPolicy
from voxflow.runtime.scheduler_settings import SchedulerSettings
from voxflow.runtime.slack import SlackStats
from voxflow.runtime.stream import StreamState
from voxflow.runtime.work import Job
from voxflow.session.admission import Admission, AdmissionSettings
from voxflow.session.events import (
    AudioOut,
    CancelStream,
    CloseStream,
    DoneOut,
    EncodeAudio,
    ErrorOut,
    OpenStream,
    SubmitSegment,
)
from voxflow.session.load_limit import LoadLimit, LoadLimitSettings
from voxflow.session.options import SessionConfig, StartOptions
from voxflow.session.session import Session

RATE = 22050
SPF = 256
VOICE = VoiceInfo("sim", "en_US", RATE, "sim", Path("sim.onnx"), Path("sim.json"))
_WORD = re.compile(r"\S+")


@dataclass(frozen=True)
class SimCosts:
    """CPU seconds of the engine's jobs on one core of the 2-core machine, bundled voice:
    measured whole-sentence renderings give about 0.016 s of text stage and 0.077 s of
    rendering per second of audio (86 frames), and a window pays 20 frames of context."""

    prepare_fixed_s: float = 0.006
    prepare_per_char_s: float = 0.001
    render_per_frame_s: float = 0.0009
    context_frames: int = 20
    wide_speedup: float = 1.3  # a job with two threads, alone on the machine
    jitter: float = 0.15  # each job's cost is scaled by a factor within 1 -+ jitter

    def prepare_s(self, chars: int) -> float:
        return self.prepare_fixed_s + self.prepare_per_char_s * chars

    def render_s(self, frames: int) -> float:
        return self.render_per_frame_s * (frames + self.context_frames)


@dataclass(frozen=True)
class SimEngine:
    """Utterances as the bundled voice's are shaped: about 15 characters a second."""

    frames_per_char: float = 5.7
    lead_frames: int = 4  # silence before the first word
    tail_frames: int = 12  # after the last

    def utterance(self, text: str) -> Utterance:
        words: list[WordSpan] = []
        frame = self.lead_frames
        for match in _WORD.finditer(text):
            length = max(2, round(len(match.group()) * self.frames_per_char))
            words.append(WordSpan(match.group(), match.start(), match.end(), frame, frame + length))
            frame += length + round(self.frames_per_char)  # the space after it
        frames = frame + self.tail_frames
        return Utterance(
            text=text,
            voice=VOICE.name,
            sample_rate=RATE,
            samples_per_frame=SPF,
            latents=np.zeros((1, frames), dtype=np.float32),
            phonemes=(),
            phoneme_frames=np.zeros(0, dtype=np.int64),
            words=tuple(words),
            onset_frames=3,
        )

    def render(self, utterance: Utterance, start: int, end: int) -> FloatArray:
        audio = np.zeros((end - start) * SPF, dtype=np.float32)
        t = np.arange(len(audio), dtype=np.float32) + start * SPF
        tone = (0.3 * np.sin(2 * math.pi * 180.0 * t / RATE)).astype(np.float32)
        for word in utterance.words:
            lo = max(word.start_frame, start) - start
            hi = min(word.end_frame, end) - start
            if hi > lo:
                audio[lo * SPF : hi * SPF] = tone[lo * SPF : hi * SPF]
        return audio


@dataclass(frozen=True)
class Turn:
    text: str
    start_s: float  # when its first token is sent
    token_rate: float = 50.0
    barge_in_after_s: float | None = None  # audio heard before the caller barges in
    # Each sentence sent whole and flushed when its last token is in (Pipecat's sentence
    # aggregation; Cartesia's ``max_buffer_delay_ms: 0``), not a token a message.
    sentences: bool = False


@dataclass
class TurnHeard:
    """What one turn's listener heard."""

    text: str
    started_at: float = 0.0  # when its context was opened (its turn began)
    first_token_at: float | None = None
    first_audio_at: float | None = None
    player: PlayoutBuffer = field(default_factory=lambda: PlayoutBuffer(0.0))
    done: bool = False  # the server finished it, or refused it
    stopped: bool = False  # the caller barged in: the listener stopped hearing it
    errors: list[str] = field(default_factory=list)
    quiet_s: list[float] = field(default_factory=list)  # each chunk's ``AudioOut.quiet_s``
    last_text_at: float | None = None  # its last text (the end of its reply)
    last_audio_at: float | None = None

    @property
    def longest_quiet_s(self) -> float:
        """The longest its context sent no audio while it owed some (its first audio's wait
        included)."""
        return max(self.quiet_s, default=0.0)

    @property
    def ttfa_ms(self) -> float | None:
        if self.first_audio_at is None or self.first_token_at is None:
            return None
        return 1000.0 * (self.first_audio_at - self.first_token_at)

    @property
    def refused(self) -> bool:
        return "concurrency_limited" in self.errors

    @property
    def gaps(self) -> int:
        return self.player.underruns

    @property
    def gap_ms(self) -> float:
        return self.player.underrun_ms


@dataclass
class _Running:
    stream: StreamState
    serial: int
    session: Session
    job: Job
    work_s: float  # CPU seconds left
    demand: float  # cores it can use
    started: float
    cpu_s: float  # CPU seconds it takes in all (what its thread's CPU clock will say)
    first_audio: bool = False  # run by a first-audio worker (a higher CPU priority)


def _kind(job: Job) -> str:
    """A job's kind, for ``Simulation.cpu_by``: its step, and what its segment is."""
    request = job.work.request
    role = "lead" if request.lead else "takeover" if request.takeover is not None else "plain"
    if job.window is None:
        return f"prepare {role}"
    frames = job.window[1] - job.window[0]
    size = next((f"<={top}" for top in (16, 32, 64) if frames <= top), ">64")
    return f"render {role} {size}"


class Simulation:
    """See the module docstring. ``add_call`` the calls, then ``run``."""

    def __init__(
        self,
        settings: SchedulerSettings | None = None,
        costs: SimCosts | None = None,
        engine: SimEngine | None = None,
        cores: float = 2.0,
        config: SessionConfig | None = None,
        seed: int = 1,
        max_load: float | None = None,
        core_changes: tuple[tuple[float, float], ...] = (),
        model_costs: SimCosts | None = None,
        learn: LoadLimitSettings | None = None,
    ) -> None:
        """``max_load``: admit streams by cost within that share of ``settings.workers``;
        ``learn``: within a capacity learnt from the workers' slack, as the server does
        (``voxflow.session.load_limit``); neither: admit every one. ``core_changes``: (when,
        cores) from then on (a neighbour that takes cores, then gives them back).
        ``model_costs``: the figures the server's cost model starts from (None: ``costs``,
        the machine's own)."""
        self.settings = settings or SchedulerSettings()
        self.policy = SchedulingPolicy(self.settings)
        self.costs = costs or SimCosts()
        self.engine = engine or SimEngine()
        self.cores = cores
        model = model_costs or self.costs
        self.config = config or SessionConfig(default_voice=VOICE.name, default_format="pcm_22050")
        self.now = 0.0
        self._events: list[tuple[float, int, Callable[[], None]]] = []
        self._order = itertools.count()
        self._rng = random.Random(seed)
        self._running: list[_Running] = []
        self._cost_model = CostModel(
            prepare_fixed_s=model.prepare_fixed_s,
            prepare_per_char_s=model.prepare_per_char_s,
            render_per_frame_s=model.render_per_frame_s,
            context_frames=model.context_frames,
            audio_cost_s=PIPER_AUDIO_COST_S,
        )
        self._streams: dict[tuple[int, int], StreamState] = {}  # (session id, serial)
        self._owners: dict[int, tuple[int, int]] = {}  # stream id: (session id, serial)
        self._heard: dict[tuple[int, str], TurnHeard] = {}
        self.turns: list[TurnHeard] = []
        self._sessions: list[Session] = []
        self._polls: dict[int, float] = {}
        self.admission: Admission | None = None
        share = 1.0 / self.settings.workers
        if learn is not None:

            def slack() -> SlackStats:
                return self.policy.slack_stats(self.now)

            self.admission = Admission(
                AdmissionSettings(unpaced_share=share),
                costs=self._audio_cost,
                limit=LoadLimit(learn, slack(), self.now),
                slack=slack,
                start_costs=self._start_cost,
            )
        elif max_load is not None:
            capacity = max_load * self.settings.workers
            self.admission = Admission(
                AdmissionSettings(capacity=capacity, unpaced_share=share),
                costs=self._audio_cost,
                start_costs=self._start_cost,
            )
        if learn is not None:
            self._at(0.0, self._tick)
        for when, count in core_changes:
            self._at(when, functools.partial(self._set_cores, count))
        self._wake_at: float | None = None
        self.cpu_s = 0.0
        self.cpu_by: dict[str, float] = {}  # CPU seconds by kind of job (``_kind``)

    def _set_cores(self, cores: float) -> None:
        self.cores = cores

    def _tick(self) -> None:
        """Admission's tick, as the server's (its learnt capacity decides on what passed),
        while anything else is left to happen."""
        assert self.admission is not None
        self.admission.learn(self.now)
        if self._events or self._running:
            interval = self.admission.tick_s
            self._at(self.now + interval, self._tick)

    def _audio_cost(self, _engine: str) -> float:
        return self._cost_model.audio_cost_s

    def _start_cost(self, _engine: str) -> float:
        return self._cost_model.start_cost_s or 0.0

    # -- set-up ----------------------------------------------------------------------------------

    def add_call(self, turns: list[Turn]) -> None:
        session = Session(self.config, lambda _name: VOICE, self.admission)
        index = len(self._sessions)
        self._sessions.append(session)
        session.on_output = lambda: self._outputs(index)
        for number, turn in enumerate(turns):
            self._at(turn.start_s, lambda n=number, t=turn: self._begin(index, n, t))

    def _begin(self, index: int, number: int, turn: Turn) -> None:
        session = self._sessions[index]
        cid = f"turn{number}"
        heard = TurnHeard(turn.text, self.now)
        self._heard[(index, cid)] = heard
        self.turns.append(heard)
        if not session.start(cid, StartOptions(), self.now):
            return
        at = self.now
        sentence = ""
        for token in stream_tokens(turn.text):
            if not turn.sentences:
                self._at(at, lambda c=cid, t=token: self._token(index, c, t))
            else:
                sentence += token
                if sentence.rstrip().endswith((".", "!", "?")):
                    self._at(at, lambda c=cid, t=sentence: self._token(index, c, t, flush=True))
                    sentence = ""
            at += 1.0 / turn.token_rate
        if sentence:
            self._at(at, lambda c=cid, t=sentence: self._token(index, c, t, flush=True))
        self._at(at, lambda c=cid: self._end(index, c))
        if turn.barge_in_after_s is not None:
            self._at(self.now, lambda c=cid, b=turn.barge_in_after_s: self._barge(index, c, b))

    def _token(self, index: int, cid: str, token: str, flush: bool = False) -> None:
        heard = self._heard[(index, cid)]
        if heard.done:
            return
        if heard.first_token_at is None:
            heard.first_token_at = self.now
        heard.last_text_at = self.now
        self._sessions[index].text(cid, token, self.now)
        if flush:
            self._sessions[index].flush(cid, self.now)

    def _end(self, index: int, cid: str) -> None:
        heard = self._heard[(index, cid)]
        if not heard.done:
            heard.last_text_at = self.now
            self._sessions[index].end(cid, self.now)

    def _barge(self, index: int, cid: str, after_s: float) -> None:
        """The caller speaks once ``after_s`` of the turn has played: the client cancels it,
        or, when the server has finished it, says it stopped playing (as Pipecat does)."""
        heard = self._heard[(index, cid)]
        if heard.stopped or heard.refused:
            return
        played = heard.player.played_ms(self.now)
        if played < 1000.0 * after_s:
            self._at(self.now + 0.02, lambda: self._barge(index, cid, after_s))
            return
        heard.stopped = True
        if heard.done:
            self._sessions[index].stop_hearing(cid)
        else:
            heard.done = True
            self._sessions[index].cancel(cid, played, self.now, self.now)

    # -- the loop --------------------------------------------------------------------------------

    def _at(self, when: float, action: Callable[[], None]) -> None:
        heapq.heappush(self._events, (max(when, self.now), next(self._order), action))

    def every(self, interval_s: float, until_s: float, action: Callable[[float], None]) -> None:
        """Call ``action(now)`` every ``interval_s`` until ``until_s`` (to watch the run)."""

        def tick() -> None:
            action(self.now)
            if self.now + interval_s <= until_s:
                self._at(self.now + interval_s, tick)

        self._at(self.now + interval_s, tick)

    def run(self, until_s: float = 600.0) -> list[TurnHeard]:
        """Run until nothing is left to happen (or ``until_s``); every turn's listener."""
        while True:
            finish = self._next_finish()
            event_at = self._events[0][0] if self._events else math.inf
            if min(finish[0], event_at) > until_s or (not self._events and finish[1] is None):
                break
            if finish[1] is not None and finish[0] <= event_at:
                self._advance(finish[0])
                self._complete(finish[1])
            else:
                when, _, action = heapq.heappop(self._events)
                self._advance(when)
                action()
            self._dispatch()
        return self.turns

    def _rates(self) -> list[float]:
        """Each running job's cores: the cores shared in proportion to the threads' CPU
        weights (their nice values, as Linux weighs them), none getting more than it can
        use; what one cannot use goes to the others."""
        rates = [0.0] * len(self._running)
        open_ = set(range(len(self._running)))
        cores = self.cores
        while open_:
            weight = sum(self._weight(self._running[i]) for i in open_)
            capped = {
                i
                for i in open_
                if cores * self._weight(self._running[i]) / weight >= self._running[i].demand
            }
            if not capped:
                for i in open_:
                    rates[i] = cores * self._weight(self._running[i]) / weight
                break
            for i in capped:
                rates[i] = self._running[i].demand
                cores -= rates[i]
            open_ -= capped
        return rates

    def _weight(self, running: _Running) -> float:
        s = self.settings
        return 1.25 ** -(s.first_audio_nice if running.first_audio else s.worker_nice)

    def _next_finish(self) -> tuple[float, _Running | None]:
        best: tuple[float, _Running | None] = (math.inf, None)
        for running, rate in zip(self._running, self._rates(), strict=True):
            at = self.now + running.work_s / rate
            if at < best[0]:
                best = (at, running)
        return best

    def _advance(self, when: float) -> None:
        elapsed = when - self.now
        if elapsed > 0:
            for running, rate in zip(self._running, self._rates(), strict=True):
                running.work_s = max(0.0, running.work_s - elapsed * rate)
                self.cpu_s += elapsed * rate
        self.now = when

    def _dispatch(self) -> None:
        """Hand released jobs to free workers (the first-audio workers take only the jobs of
        a stream's first audio, as the scheduler's do); wake when the next one is released."""
        for first_audio in (False, True):
            self._start_jobs(first_audio)
        for first_audio in (False, True):
            self._wake_for_release(first_audio)
        for index, session in enumerate(self._sessions):
            deadline = session.next_deadline()
            if deadline is not None and self._polls.get(index) != deadline:
                self._polls[index] = deadline
                self._at(deadline, lambda i=index, d=deadline: self._poll(i, d))

    def _free_workers(self, first_audio: bool) -> int:
        s = self.settings
        workers = s.first_audio_workers if first_audio else s.workers
        return workers - sum(1 for r in self._running if r.first_audio == first_audio)

    def _start_jobs(self, first_audio: bool) -> None:
        while self._free_workers(first_audio) > 0:
            picked = self.policy.next_job(self.now, len(self._running), first_audio)
            if picked is None:
                break
            stream, job = picked
            session_index, serial = self._owners[stream.id]
            request = job.work.request
            if job.window is None:
                cost = self.costs.prepare_s(len(request.text))
            else:
                cost = self.costs.render_s(job.window[1] - job.window[0])
            cost *= self._rng.uniform(1 - self.costs.jitter, 1 + self.costs.jitter)
            demand = 1.0
            if job.threads is not None and job.threads > 1:
                demand = self.costs.wide_speedup
            kind = _kind(job)
            self.cpu_by[kind] = self.cpu_by.get(kind, 0.0) + cost
            session = self._sessions[session_index]
            self._running.append(
                _Running(stream, serial, session, job, cost, demand, self.now, cost, first_audio)
            )

    def _wake_for_release(self, first_audio: bool) -> None:
        wait = self.policy.next_release_s(self.now, first_audio)
        if wait is not None and self._free_workers(first_audio) > 0:
            # (A busy machine looks again when a job finishes.)
            wake = self.now + max(wait, 1e-6)
            if self._wake_at is None or self._wake_at <= self.now or wake < self._wake_at:
                self._wake_at = wake
                self._at(wake, lambda: None)

    def _poll(self, index: int, deadline: float) -> None:
        if self._polls.get(index) == deadline:
            del self._polls[index]
            self._sessions[index].poll(self.now)

    def _complete(self, running: _Running) -> None:
        self._running.remove(running)
        job, stream = running.job, running.stream
        compute_s = self.now - running.started
        events: list[SchedulerEvent]
        if job.window is None:
            utterance = self.engine.utterance(job.work.request.text)
            events = self.policy.prepared(
                stream, job, utterance, compute_s, self.now, cpu_s=running.cpu_s
            )
        else:
            assert job.work.utterance is not None
            audio = self.engine.render(job.work.utterance, *job.window)
            events = self.policy.rendered(
                stream, job, audio, compute_s, self.now, cpu_s=running.cpu_s
            )
        for event in events:
            running.session.synthesis_event(running.serial, event, self.now)

    # -- the session's outputs -------------------------------------------------------------------

    def _outputs(self, index: int) -> None:
        session = self._sessions[index]
        for output in session.drain():
            if isinstance(output, OpenStream):
                stream = self.policy.open_stream(
                    lambda _e: None, self._cost_model, output.paced, output.burst_s
                )
                self._streams[(index, output.serial)] = stream
                self._owners[stream.id] = (index, output.serial)
            elif isinstance(output, SubmitSegment):
                stream = self._streams[(index, output.serial)]
                if not stream.cancelled:
                    events = self.policy.submit(stream, output.request, self.now)
                    serial = output.serial
                    self._at(self.now, lambda e=events, s=serial: self._deliver(index, s, e))
            elif isinstance(output, CloseStream):
                stream = self._streams[(index, output.serial)]
                events = self.policy.close_input(stream, self.now)
                serial = output.serial
                self._at(self.now, lambda e=events, s=serial: self._deliver(index, s, e))
            elif isinstance(output, CancelStream):
                stream = self._streams.pop((index, output.serial), None)
                if stream is not None:
                    self.policy.cancel(stream)
            elif isinstance(output, EncodeAudio):
                result = output.job.run()
                serial = output.serial
                self._at(self.now, lambda r=result, s=serial: session.encoded(s, r, self.now))
            elif isinstance(output, AudioOut):
                heard = self._heard[(index, output.context_id)]
                if not heard.done and output.duration_ms > 0:
                    heard.first_audio_at = heard.first_audio_at or self.now
                    heard.last_audio_at = self.now
                    heard.player.add(self.now, output.duration_ms)
                    heard.quiet_s.append(output.quiet_s)
            elif isinstance(output, DoneOut):
                self._heard[(index, output.context_id)].done = True
            elif isinstance(output, ErrorOut) and output.context_id is not None:
                heard = self._heard[(index, output.context_id)]
                heard.errors.append(output.code)
                if output.code == "concurrency_limited":
                    heard.done = True  # refused: the agent stops sending its text

    def _deliver(self, index: int, serial: int, events: list[SchedulerEvent]) -> None:
        for event in events:
            self._sessions[index].synthesis_event(serial, event, self.now)
