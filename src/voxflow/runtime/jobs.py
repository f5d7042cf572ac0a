"""What goes into the scheduler (``SegmentRequest``) and what comes out (``SchedulerEvent``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from voxflow.engines.base import FloatArray, Utterance, VoiceSettings

__all__ = [
    "Drained",
    "Failed",
    "Prepared",
    "Rendered",
    "SchedulerEvent",
    "SegmentRequest",
    "Sink",
    "Skipped",
    "Takeover",
]


@dataclass(frozen=True)
class Takeover:
    """A request that re-renders an earlier *lead* request's text as part of a longer utterance
    (the whole sentence) and takes over from the lead at a word boundary.

    ``points`` are the places where the switch may happen, in order: pairs of character offsets
    ``(in the lead's text, in this request's text)`` that sit at the same place of the written
    text: word starts, the lead's start ``(0, 0)`` first and the lead's end last. The scheduler
    picks the first one the lead has not rendered past (``voxflow.runtime.handover``).
    """

    lead_tag: int
    points: tuple[tuple[int, int], ...]

    def __post_init__(self) -> None:
        if not self.points:
            raise ValueError("a takeover needs at least one switch point")
        for (a, b), (c, d) in zip(self.points, self.points[1:], strict=False):
            if c < a or d < b:
                raise ValueError(f"switch points must not go backwards: {self.points}")


@dataclass(frozen=True)
class SegmentRequest:
    """One segment of a stream. ``tag`` is the caller's handle, echoed in every event.

    ``lead``: a takeover of this request may follow (the text ends inside a sentence); it is
    rendered only a little ahead of playback until the takeover is prepared, so the switch can
    come early. ``takeover``: this request continues an earlier lead of the same stream.
    ``lookahead``: text after ``text`` that its text stage reads but does not say
    (``voxflow.engines.lookahead``).
    """

    text: str
    voice: str
    settings: VoiceSettings
    tag: int
    lead: bool = False
    takeover: Takeover | None = None
    lookahead: str = ""

    @property
    def read_chars(self) -> int:
        """The characters its text stage reads: its text and its lookahead."""
        return len(self.text) + len(self.lookahead)


@dataclass(frozen=True)
class Prepared:
    tag: int
    utterance: Utterance
    compute_s: float
    cached: bool = False  # the phrase cache had it: its windows are cut from the cached audio


@dataclass(frozen=True)
class Rendered:
    """One window of a segment's audio, frames ``[start_frame, end_frame)`` of its utterance.

    ``first``/``last``: the segment's first and last window. A takeover's first window starts
    where its speech takes over (not at frame 0) and its first ``splice_frames`` frames overlap
    the lead's last ones, to be cross-faded with them; the lead's last window then has
    ``continues`` set. A lead cut where its rendering had got to ends with an empty window; one
    cut before it rendered anything is ``Skipped``.
    """

    tag: int
    start_frame: int
    end_frame: int
    audio: FloatArray = field(repr=False)
    last: bool  # the segment's final window
    compute_s: float
    late_s: float  # how far past its deadline it finished (0 when on time or before first audio)
    first: bool = False
    continues: bool = False
    splice_frames: int = 0


@dataclass(frozen=True)
class Skipped:
    """A lead its takeover replaced before any of it was rendered: none of it is heard, and the
    takeover speaks the whole sentence from its start, as a segment of its own."""

    tag: int


@dataclass(frozen=True)
class Failed:
    tag: int
    error: Exception


@dataclass(frozen=True)
class Drained:
    """Input was closed and every submitted segment has been rendered."""


SchedulerEvent = Prepared | Rendered | Skipped | Failed | Drained
Sink = Callable[[SchedulerEvent], None]
