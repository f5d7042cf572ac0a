"""One-shot synthesis of a whole text in this process, through the server's own path.

``voxflow say``, the engine benchmark and tests speak through a ``Session`` driven by a
``LocalRunner`` against a ``Scheduler``: the segmenting, the lead and its takeover, the render
windows, the seams and the encoding are the server's, not a copy, so a fix to one is a fix to all.

``streamed=False`` is the sentence-by-sentence baseline of local TTS servers: each segment is
rendered in one run, and there is no lead (a lead exists only to get a first window out early).
With the same segments and seed both modes give the same audio, up to the window edges.

A text may also come in pieces as they arrive (an LLM's tokens): a thread of the speaker's reads
them and hands each to the session as it comes, so that synthesis starts on the first ones, as
the server's does for a client that streams its text.

The word timings come with the audio, as a client of the server receives them, each tagged with
the engine request whose rendering timed it: a lead sends its words window by window and its
takeover goes on with timings contiguous to the lead's, so only the tag tells where one
separately rendered piece of speech ends and the next begins.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from functools import partial
from types import TracebackType

import numpy as np

from voxflow.audio.formats import OutputFormat, UnsupportedFormatError, parse_output_format
from voxflow.connection.local import LocalRunner
from voxflow.engines.base import Engine, FloatArray
from voxflow.runtime.jobs import Rendered
from voxflow.runtime.scheduler import Scheduler
from voxflow.runtime.scheduler_settings import SchedulerSettings
from voxflow.session.events import AudioOut, ClientEvent, ErrorOut, TimestampsOut, WordTiming
from voxflow.session.options import SessionConfig, StartOptions
from voxflow.session.session import Session

__all__ = ["LocalSpeaker", "SayResult", "SayStats", "SpokenWords"]

# One window per segment: more frames than any piece has (pieces are capped at a few hundred
# spoken characters, about 12 frames each).
WHOLE_SEGMENT_FRAMES = 1 << 16
_CONTEXT = "say"


@dataclass(frozen=True)
class SayStats:
    """Timings of one synthesis; ``ttfa_ms`` runs from the start (segmentation and phonemization
    included) to the first audio; ``segments`` counts the engine requests (a lead and its
    takeover are two)."""

    ttfa_ms: float
    synth_ms: float
    audio_ms: float
    rtf: float
    segments: int
    chunks: int

    def as_dict(self) -> dict[str, float | int]:
        return {
            "ttfa_ms": round(self.ttfa_ms, 2),
            "synth_ms": round(self.synth_ms, 2),
            "audio_ms": round(self.audio_ms, 2),
            "rtf": round(self.rtf, 4),
            "segments": self.segments,
            "chunks": self.chunks,
        }


@dataclass(frozen=True)
class SpokenWords:
    """Word timings of a stream's audio: times in its audio, characters in its text (as the
    server sends them). ``piece``: the engine request whose rendering timed them, as an index
    into the stream's requests (``SayResult.pieces``; ``LocalSpeaker.last_pieces`` once the
    stream has ended); None when no rendering did."""

    words: tuple[WordTiming, ...]
    piece: int | None


@dataclass(frozen=True)
class SayResult:
    sample_rate: int
    audio: FloatArray
    pieces: tuple[str, ...]  # the spoken text of each engine request, in order
    stats: SayStats
    timings: tuple[SpokenWords, ...] = ()  # the word timings, in the order they came

    @property
    def words(self) -> tuple[WordTiming, ...]:
        """Every word spoken, in order."""
        return tuple(word for timing in self.timings for word in timing.words)


class LocalSpeaker:
    """Speaks texts (whole, or as they arrive) through a session in this process; owns its
    scheduler's workers.

    One speaker renders one text at a time; ``close`` (or ``with``) stops its workers.
    """

    def __init__(
        self,
        engine: Engine,
        config: SessionConfig,
        streamed: bool = True,
        scheduler: SchedulerSettings | None = None,
    ) -> None:
        settings = scheduler or SchedulerSettings()
        if not streamed:
            settings = replace(
                settings,
                first_window_frames=WHOLE_SEGMENT_FRAMES,
                max_window_frames=WHOLE_SEGMENT_FRAMES,
            )
            config = replace(config, chunking=replace(config.chunking, lead_cost=None))
        self._voices = engine.voice_info
        self._config = config
        self._scheduler = Scheduler(engine, settings)
        self.last_pieces: tuple[str, ...] = ()  # the engine requests of the last text spoken

    def __enter__(self) -> LocalSpeaker:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        self._scheduler.shutdown()

    def stream(
        self, text: str | Iterable[str], options: StartOptions, timeout_s: float = 600.0
    ) -> Iterator[AudioOut | SpokenWords]:
        """The audio of ``text``, chunk by chunk as it is rendered (``AudioOut``), and its word
        timings (``SpokenWords``), in the order a client of the server receives them.

        ``text`` is the whole text, or its pieces as they arrive (any iterable of strings, read
        on a thread of the speaker's: it may block between pieces, as an LLM's stream does); its
        end ends the text, and an error it raises is raised here. The output format is the
        voice's own rate as 16-bit PCM unless ``options`` names one. ``ValueError`` for an empty
        text and for anything the session refuses (unknown voice, bad settings);
        ``TimeoutError`` after ``timeout_s``. Closing the iterator early stops the synthesis
        (and the reading of the pieces, at the next one).
        """
        if isinstance(text, str) and not text.strip():
            raise ValueError("nothing to say: the text is empty")
        options = replace(options, output_format=self._format(options).name, paced=False)
        session = Session(self._config, self._voices)
        runner = LocalRunner(session, self._scheduler)
        stopped = threading.Event()
        try:
            session.start(_CONTEXT, options, runner.now())
            if isinstance(text, str):
                session.text(_CONTEXT, text, runner.now())
                session.end(_CONTEXT, runner.now())
            else:
                reader = threading.Thread(
                    target=_hand_over, args=(text, session, runner, stopped), daemon=True
                )
                reader.start()
            events = runner.dispatch()
            deadline = runner.now() + timeout_s
            while True:
                yield from _client_events(events, _piece(runner))
                if runner.finished(_CONTEXT):
                    break
                if runner.now() > deadline:
                    raise TimeoutError(f"no end of the text after {timeout_s} s")
                events = runner.step(deadline - runner.now())
        finally:
            stopped.set()
            self.last_pieces = tuple(request.text for request in runner.submitted)
            runner.close()

    def say(
        self,
        text: str | Iterable[str],
        options: StartOptions,
        clock: Callable[[], float] = time.perf_counter,
    ) -> SayResult:
        """Synthesize ``text`` (whole, or its pieces as they arrive) completely and measure it
        (see ``SayStats`` and ``stream``)."""
        started = clock()
        first_audio: float | None = None
        chunks: list[bytes] = []
        timings: list[SpokenWords] = []
        for event in self.stream(text, options):
            if isinstance(event, SpokenWords):
                timings.append(event)
                continue
            first_audio = first_audio if first_audio is not None else clock()
            chunks.append(event.data)
        finished = clock()
        if first_audio is None:
            raise ValueError("nothing to say: the text has no pronounceable words")
        rate = self._format(options).sample_rate
        pcm = np.frombuffer(b"".join(chunks), dtype="<i2")
        audio = (pcm.astype(np.float32) / np.float32(32768.0)).astype(np.float32, copy=False)
        audio_ms = 1000.0 * len(audio) / rate
        synth_ms = 1000.0 * (finished - started)
        stats = SayStats(
            ttfa_ms=1000.0 * (first_audio - started),
            synth_ms=synth_ms,
            audio_ms=audio_ms,
            rtf=synth_ms / audio_ms,
            segments=len(self.last_pieces),
            chunks=len(chunks),
        )
        return SayResult(rate, audio, self.last_pieces, stats, tuple(timings))

    def _format(self, options: StartOptions) -> OutputFormat:
        """PCM at the voice's own rate (no resampling), or at the rate of the format asked for."""
        if options.output_format is not None:
            rate = parse_output_format(options.output_format).sample_rate
        else:
            rate = self._voices(options.voice or self._config.default_voice).sample_rate
        try:
            return parse_output_format(f"pcm_{rate}")
        except UnsupportedFormatError:
            return parse_output_format("pcm_24000")


def _piece(runner: LocalRunner) -> int | None:
    """Which of the runner's engine requests rendered the result its last step applied."""
    result = runner.last_result
    if not isinstance(result, Rendered):
        return None
    for index, request in enumerate(runner.submitted):
        if request.tag == result.tag:
            return index
    return None


def _client_events(
    events: Iterable[ClientEvent], piece: int | None
) -> Iterator[AudioOut | SpokenWords]:
    """What a speaker's stream yields of a step's client events (``piece``: the request that
    caused them); an error is raised."""
    for event in events:
        if isinstance(event, ErrorOut):
            raise ValueError(f"{event.code}: {event.message}")
        if isinstance(event, AudioOut):
            yield event
        elif isinstance(event, TimestampsOut) and event.words:
            yield SpokenWords(event.words, piece)


def _hand_over(
    pieces: Iterable[str], session: Session, runner: LocalRunner, stopped: threading.Event
) -> None:
    """Read ``pieces`` and hand each to ``session`` on the runner's thread, then the end of the
    text; an error reading them is raised on the runner's thread instead. Stops reading once
    ``stopped`` is set (the speaker's stream ended)."""
    try:
        for piece in pieces:
            if stopped.is_set():
                return
            if piece:
                runner.call_soon_threadsafe(partial(_text, session, runner, piece))
    except Exception as error:  # raised where the stream is read, not lost with this thread
        runner.call_soon_threadsafe(partial(_raise, error))
        return
    runner.call_soon_threadsafe(partial(_end, session, runner))


def _text(session: Session, runner: LocalRunner, piece: str) -> None:
    session.text(_CONTEXT, piece, runner.now())


def _end(session: Session, runner: LocalRunner) -> None:
    session.end(_CONTEXT, runner.now())


def _raise(error: Exception) -> None:
    raise error
