"""Running a ``TextBuffer`` over a text fed in pieces, and checking the segments it gives: what the
buffer's tests (its rules, its leads) share."""

from __future__ import annotations

import itertools

from voxflow.text.buffer import TextBuffer
from voxflow.text.chunking import ChunkingConfig, Segment, SegmentEnd
from voxflow.text.segment import BoundaryKind, find_boundaries

__all__ = ["check_segments", "run", "split_at", "texts"]


def run(config: ChunkingConfig, pieces: list[str]) -> list[Segment]:
    """The segments a fresh buffer gives for ``pieces`` fed one by one, then flushed."""
    buffer = TextBuffer(config)
    out: list[Segment] = []
    for piece in pieces:
        out.extend(buffer.feed(piece, now=0.0))
    out.extend(buffer.flush())
    return out


def texts(segments: list[Segment]) -> list[str]:
    return [segment.text for segment in segments]


def split_at(text: str, cuts: list[int]) -> list[str]:
    """``text`` cut at ``cuts`` (in any order, repeats allowed: empty pieces)."""
    points = [0, *sorted(cuts), len(text)]
    return [text[a:b] for a, b in itertools.pairwise(points)]


def check_segments(stream: str, segments: list[Segment], config: ChunkingConfig) -> None:
    """Segments cover all of the stream's text, in order, within the cap, with true kinds."""
    boundary_kinds = {b.pos: b.kind for b in find_boundaries(stream, final=False)}
    previous_end = 0
    for number, segment in enumerate(segments):
        assert segment.text
        assert segment.text == stream[segment.start : segment.end] == segment.text.strip()
        assert segment.end - segment.start <= config.max_chars
        assert previous_end <= segment.start
        assert stream[previous_end : segment.start].strip() == ""
        assert (segment.index, segment.turn_first) == (number, number == 0)
        if segment.lead:
            assert number == 0 and config.leads is not None
            assert segment.boundary < SegmentEnd.SENTENCE
        if segment.boundary is SegmentEnd.CUT:
            assert segment.end - segment.start == config.max_chars
            assert not stream[segment.end].isspace()
        elif segment.boundary is SegmentEnd.FLUSH:
            assert number == len(segments) - 1
        else:
            assert boundary_kinds[segment.end] == BoundaryKind(segment.boundary)
        previous_end = segment.end
    assert stream[previous_end:].strip() == ""
