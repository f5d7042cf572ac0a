"""How the seam joiner joins segments: the kind of each join and the settings that set its pause.

``JoinKind`` is the audio layer's own word for how the text before a join ended. The text layer's
``SegmentEnd`` says more (a hard cut inside a word, say), but a join only needs to know which
pause to put there, and audio must not import text: the session maps one to the other.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass

__all__ = ["JoinKind", "SeamSettings"]


class JoinKind(enum.Enum):
    """How the segment before a join ended, as far as its pause goes."""

    WORD = "word"  # between two words of a sentence, or a hard cut inside a long word
    CLAUSE = "clause"  # at a comma, semicolon or the like
    SENTENCE = "sentence"
    FLUSH = "flush"  # the client flushed: usually the end of a reply


@dataclass(frozen=True)
class SeamSettings:
    """How segments are joined. Durations in milliseconds, levels in dBFS.

    The pauses are measured from the last frame of speech of one segment to the first frame of
    speech of the next. Defaults: 250 ms after a sentence is about what Piper leaves between
    sentences rendered one by one (its trailing plus leading silence), so sentence chunking sounds
    as it did; a clause gets a shorter, still audible 150 ms (the bundled voice itself pauses
    200-350 ms at a comma inside one utterance, but a cut at a comma is most often taken to get
    audio out early, and a long pause there sounds like hesitation); a word cut, or a hard cut
    inside a word, gets none, leaving only the kept margins (30 ms, the length of a short gap
    between two words of fluent speech); a flush usually ends a reply, so it gets a sentence's
    pause.

    ``silence_db`` is low because the end of a word can be quiet: the release of a final "t" can
    sit below -50 dBFS over 5 ms, and a -45 dBFS threshold put the end of speech up to 130 ms
    early on the bundled voice (-60: within 15 ms); the voice's silence is near -95 dBFS.
    """

    sentence_pause_ms: float = 250.0
    clause_pause_ms: float = 150.0
    word_pause_ms: float = 0.0
    flush_pause_ms: float = 250.0
    fade_ms: float = 5.0
    lead_keep_ms: float = 10.0
    tail_keep_ms: float = 20.0
    silence_db: float = -60.0
    frame_ms: float = 5.0
    max_hold_ms: float = 100.0

    def __post_init__(self) -> None:
        for name in (
            "sentence_pause_ms",
            "clause_pause_ms",
            "word_pause_ms",
            "flush_pause_ms",
            "fade_ms",
            "lead_keep_ms",
            "tail_keep_ms",
            "max_hold_ms",
        ):
            value = getattr(self, name)
            if not math.isfinite(value) or value < 0:
                raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
        if not math.isfinite(self.frame_ms) or self.frame_ms <= 0:
            raise ValueError(f"frame_ms must be a finite number > 0, got {self.frame_ms!r}")
        if not math.isfinite(self.silence_db):
            raise ValueError(f"silence_db must be finite, got {self.silence_db!r}")
        # The fades must fit inside the kept margins, or they would reach into speech.
        if self.fade_ms > min(self.lead_keep_ms, self.tail_keep_ms):
            raise ValueError("fade_ms must not exceed lead_keep_ms or tail_keep_ms")
        # Before speech starts the joiner holds the lead margin plus a partial frame; the hold
        # limit must cover that too, or it would not be a limit.
        if self.max_hold_ms < max(self.tail_keep_ms, self.lead_keep_ms + self.frame_ms):
            raise ValueError(
                "max_hold_ms must be at least tail_keep_ms and lead_keep_ms + frame_ms"
            )

    def pause_ms(self, boundary: JoinKind | None) -> float:
        """The pause after a segment that ended at ``boundary`` (None: no pause)."""
        match boundary:
            case None:
                return 0.0
            case JoinKind.SENTENCE:
                return self.sentence_pause_ms
            case JoinKind.CLAUSE:
                return self.clause_pause_ms
            case JoinKind.WORD:
                return self.word_pause_ms
            case JoinKind.FLUSH:
                return self.flush_pause_ms
