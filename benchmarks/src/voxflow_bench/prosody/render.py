"""The two renderings the prosody bench compares: what the server streams, and whole sentences.

*Streamed*: one session per reply, in process, on the server's own ``Services`` (its scheduler,
engine, normalizer and session settings) through ``voxflow.connection.local.LocalRunner``, in the
voice's own format (``pcm_22050``: no resampling between the engine and the measurement). The
audio and timestamps are what a client of the native protocol receives. One thing is observed
that a client does not see: which *piece* (scheduler request) each ``timestamps`` event came
from. A piece normally sends all its words in one event, but a lead (the short first piece of a
speculative start) sends them window by window, and its takeover (the whole sentence, switched
to at a word boundary) continues with timings contiguous to the lead's; so only the piece tags
tell where one separately rendered piece ends and the next begins.

*Reference*: the reply cut into sentences as the ``sentence`` strategy cuts it, each sentence
normalized as a session normalizes a segment, prepared once and rendered in one run, and the
sentences joined by a ``SeamJoiner`` with the server's seam settings: what the server sends with
sentence chunking, so sentence joins sound the same in both renderings and only the cuts inside
sentences differ.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import numpy.typing as npt

from voxflow import (
    ChunkingConfig,
    Engine,
    NormalizationMode,
    StartOptions,
    Strategy,
    VoiceSettings,
    segment_text,
)
from voxflow.audio.seam_settings import SeamSettings
from voxflow.audio.seams import SeamJoiner, SegmentMap
from voxflow.connection.local import LocalRunner
from voxflow.engines.base import Utterance
from voxflow.runtime.jobs import Rendered, SchedulerEvent
from voxflow.server.services import Services
from voxflow.session.context import join_kind
from voxflow.session.events import (
    AudioOut,
    ClientEvent,
    DoneOut,
    ErrorOut,
    TimestampsOut,
    WordTiming,
)
from voxflow.session.pieces import PieceText
from voxflow.session.session import Session
from voxflow.session.timings import word_timings
from voxflow.text.chunking import Segment, SegmentEnd
from voxflow.text.normalize.normalizer import Normalized, Normalizer

FloatArray = npt.NDArray[np.float32]

STREAM_FORMAT = "pcm_22050"
_CONTEXT = "prosody"
_PIECE = re.compile(r"\s*\S{1,4}")
EVENT_TIMEOUT_S = 120.0  # a stream that says nothing this long has failed


@dataclass(frozen=True, eq=False)
class Rendering:
    """Audio of one reply (float, full scale 1.0) and its words, grouped by the piece of text
    each was rendered in (a streamed piece, or a reference sentence); ``events`` counts the
    ``timestamps`` events they came in."""

    sample_rate: int
    audio: FloatArray = field(repr=False)
    pieces: tuple[tuple[WordTiming, ...], ...]
    events: int = 0

    @property
    def words(self) -> tuple[WordTiming, ...]:
        return tuple(word for piece in self.pieces for word in piece)

    @property
    def duration_s(self) -> float:
        return len(self.audio) / self.sample_rate


def split_pieces(text: str) -> list[str]:
    """``text`` as LLM-like pieces of up to 4 characters, whitespace leading; their
    concatenation is ``text`` (trailing whitespace joins the last piece)."""
    pieces = _PIECE.findall(text)
    consumed = sum(len(piece) for piece in pieces)
    if consumed < len(text):
        if pieces:
            pieces[-1] += text[consumed:]
        else:
            pieces = [text]
    return pieces


def group_pieces(
    events: Sequence[TimestampsOut], tags: Sequence[int | None]
) -> tuple[tuple[WordTiming, ...], ...]:
    """The words of consecutive events of the same piece, joined (an untagged event is a piece
    of its own)."""
    pieces: list[list[WordTiming]] = []
    previous: int | None = None
    for event, tag in zip(events, tags, strict=True):
        if not event.words:
            continue
        if pieces and tag is not None and tag == previous:
            pieces[-1].extend(event.words)
        else:
            pieces.append(list(event.words))
        previous = tag
    return tuple(tuple(piece) for piece in pieces)


def stream_reply(
    services: Services,
    text: str,
    voice: str | None,
    settings: VoiceSettings,
    pieces: Sequence[str] | None = None,
    token_rate: float = 50.0,
) -> Rendering:
    """Speak ``text`` through a fresh session and collect what a client receives.

    ``pieces`` None sends the text in one message; otherwise the pieces go out ``token_rate``
    per second (an LLM's pace), on an absolute schedule so a late wake-up delays one piece only;
    results are applied while waiting, as a server's event loop does.
    """
    if token_rate <= 0:
        raise ValueError(f"token_rate must be > 0, got {token_rate}")
    if pieces is not None and "".join(pieces) != text:
        raise ValueError("the pieces do not add up to the text")
    session = Session(services.session_config(), services.registry.get)
    runner = LocalRunner(session, services.scheduler)
    collected = _Collected()
    try:
        options = StartOptions(voice=voice, output_format=STREAM_FORMAT, settings=settings)
        session.start(_CONTEXT, options, runner.now())
        collected.take(runner.dispatch(), None)
        begin = time.monotonic()
        for index, piece in enumerate(pieces if pieces is not None else [text]):
            while (delay := begin + index / token_rate - time.monotonic()) > 0:
                collected.take(runner.step(delay), runner.last_result)
            session.text(_CONTEXT, piece, runner.now())
            collected.take(runner.dispatch(), None)
        session.end(_CONTEXT, runner.now())
        collected.take(runner.dispatch(), None)
        give_up = time.monotonic() + EVENT_TIMEOUT_S
        while not collected.done:
            if time.monotonic() > give_up:
                raise TimeoutError(f"no end of the reply after {EVENT_TIMEOUT_S} s")
            collected.take(runner.step(give_up - time.monotonic()), runner.last_result)
    finally:
        runner.close()
    rate = services.engine.voice_info(voice or services.default_voice).sample_rate
    audio = np.concatenate(collected.chunks) if collected.chunks else np.zeros(0, np.float32)
    grouped = group_pieces(collected.timestamps, collected.tags)
    return Rendering(rate, audio.astype(np.float32, copy=False), grouped, len(collected.timestamps))


class _Collected:
    """What a client receives for the reply, with the piece each timestamps event came from."""

    def __init__(self) -> None:
        self.chunks: list[FloatArray] = []
        self.timestamps: list[TimestampsOut] = []
        self.tags: list[int | None] = []
        self.done = False

    def take(self, events: Sequence[ClientEvent], cause: SchedulerEvent | None) -> None:
        tag = cause.tag if isinstance(cause, Rendered) else None
        for event in events:
            if isinstance(event, AudioOut):
                pcm = np.frombuffer(event.data, dtype="<i2").astype(np.float32)
                self.chunks.append(pcm / np.float32(32768.0))
            elif isinstance(event, TimestampsOut):
                self.timestamps.append(event)
                self.tags.append(tag)
            elif isinstance(event, ErrorOut):
                raise RuntimeError(f"the server reported {event.code}: {event.message}")
            elif isinstance(event, DoneOut):
                self.done = True


def render_reference(
    engine: Engine,
    voice: str,
    text: str,
    settings: VoiceSettings,
    seams: SeamSettings,
    normalizer: Normalizer,
    normalization: NormalizationMode = NormalizationMode.AUTO,
) -> Rendering:
    """Each sentence of ``text`` as one utterance, joined as the server joins sentences.

    A seeded ``settings`` gives sentence ``i`` the seed ``seed + i``, as a session gives its
    segments (and ``voxflow say`` its sentences).
    """
    sample_rate = engine.voice_info(voice).sample_rate
    joiner = SeamJoiner(sample_rate, seams)
    chunks: list[FloatArray] = []
    pieces: list[tuple[WordTiming, ...]] = []
    previous: SegmentEnd | None = None
    for index, segment in enumerate(segment_text(text, ChunkingConfig(strategy=Strategy.SENTENCE))):
        sentence_settings = (
            settings if settings.seed is None else replace(settings, seed=settings.seed + index)
        )
        normalized = normalizer.normalize(segment.text, normalization)
        utterance = engine.prepare(normalized.text, voice, sentence_settings)
        spf = utterance.samples_per_frame
        keep_until = utterance.words[-1].end_frame * spf if utterance.words else 0
        joiner.start_segment(join_kind(previous), keep_until=keep_until)
        audio = (
            engine.render(utterance, 0, utterance.num_frames)
            if utterance.num_frames
            else np.zeros(0, dtype=np.float32)
        )
        chunks.append(joiner.window(audio, last=True))
        segment_map = joiner.segment_map
        if segment_map is not None and utterance.words:
            words = reference_timings(utterance, segment, normalized, segment_map)
            if words:
                pieces.append(tuple(words))
        previous = segment.boundary
    chunks.append(joiner.flush())
    joined = np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.float32)
    return Rendering(sample_rate, joined.astype(np.float32, copy=False), tuple(pieces), len(pieces))


def reference_timings(
    utterance: Utterance, segment: Segment, normalized: Normalized, segment_map: SegmentMap
) -> list[WordTiming]:
    """A sentence's word timings on the joined timeline, in the reply's written characters, by
    the session's own rule (``voxflow.session.timings``)."""
    text = PieceText(segment.start, normalized, 0, len(normalized.text), segment.boundary)
    return word_timings(utterance, utterance.words, text, segment_map.to_output)
