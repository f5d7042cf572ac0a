"""The two renderings the prosody bench compares: what the server streams, and whole sentences.

Both are spoken by a ``LocalSpeaker`` (the server's own path, in this process) in the voice's own
format, with no resampling between the engine and the measurement, and collected as a client of
the server receives them: the audio and the word timings. Each timing comes tagged with the
engine request (the *piece*) whose rendering timed it. A piece normally sends all its words in
one event, but a lead (the short first piece of a speculative start) sends them window by window,
and its takeover (the whole sentence, switched to at a word boundary) goes on with timings
contiguous to the lead's: only the tags tell where one separately rendered piece ends and the
next begins.

*Streamed* (``streamed_speaker``): the server's chunking and render windows, the reply given
whole or as LLM-like pieces at an LLM's pace.

*Reference* (``reference_speaker``): the reply cut into sentences as the ``sentence`` strategy
cuts it, each sentence rendered in one run (``streamed=False``) and joined to the next by the
server's seams: what the server sends with sentence chunking, so sentence joins sound the same in
both renderings and only the cuts inside sentences differ. A seeded voice gives sentence ``i``
the seed ``seed + i``, as a session gives its segments.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from voxflow import (
    ChunkingConfig,
    Engine,
    LocalSpeaker,
    SchedulerSettings,
    SessionConfig,
    SpokenWords,
    StartOptions,
    Strategy,
    VoiceSettings,
    WordTiming,
)
from voxflow_bench.tokens import paced

FloatArray = npt.NDArray[np.float32]

_PIECE = re.compile(r"\s*\S{1,4}")


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


def group_pieces(timings: Sequence[SpokenWords]) -> tuple[tuple[WordTiming, ...], ...]:
    """The words of consecutive timings of the same piece, joined (an untagged timing is a piece
    of its own)."""
    pieces: list[list[WordTiming]] = []
    previous: int | None = None
    for timing in timings:
        if not timing.words:
            continue
        if pieces and timing.piece is not None and timing.piece == previous:
            pieces[-1].extend(timing.words)
        else:
            pieces.append(list(timing.words))
        previous = timing.piece
    return tuple(tuple(piece) for piece in pieces)


def streamed_speaker(
    engine: Engine, voice: str, scheduler: SchedulerSettings | None = None
) -> LocalSpeaker:
    """A speaker that speaks as the server streams: its chunking, leads and windows."""
    return LocalSpeaker(engine, SessionConfig(voice), scheduler=scheduler)


def reference_speaker(engine: Engine, voice: str) -> LocalSpeaker:
    """A speaker that renders each sentence in one run, joined as the server joins sentences."""
    config = SessionConfig(voice, chunking=ChunkingConfig(strategy=Strategy.SENTENCE))
    return LocalSpeaker(engine, config, streamed=False)


def render(
    speaker: LocalSpeaker,
    text: str,
    settings: VoiceSettings,
    pieces: Sequence[str] | None = None,
    token_rate: float = 50.0,
) -> Rendering:
    """Speak ``text`` and collect what a client receives.

    ``pieces`` None gives the text in one message; otherwise the pieces arrive ``token_rate``
    per second (an LLM's pace), on an absolute schedule, while the speaker renders.
    """
    if pieces is not None and "".join(pieces) != text:
        raise ValueError("the pieces do not add up to the text")
    spoken = speaker.say(
        text if pieces is None else paced(pieces, token_rate), StartOptions(settings=settings)
    )
    return Rendering(
        spoken.sample_rate, spoken.audio, group_pieces(spoken.timings), len(spoken.timings)
    )
