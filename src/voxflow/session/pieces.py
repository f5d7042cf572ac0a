"""From written segments to what the engine renders: *pieces* of spoken text.

A segment becomes one piece, except in two cases:

* its spoken form is longer than ``max_chars``: the text stage's time and memory grow faster than
  linearly with its input (a 250-character line of digits is 1,250 spoken characters and took
  650 MiB), so the spoken form is cut at word boundaries into pieces of at most ``max_chars``,
  preferring a cut after punctuation;
* it finishes a sentence whose first part was a *lead* (``Segment.lead``): the piece is then the
  whole sentence, lead included, and carries the points where it may take over from the lead
  (``voxflow.runtime.handover``).

Pure functions and value objects; ``voxflow.session.context`` keeps the state.
"""

from __future__ import annotations

from dataclasses import dataclass

from voxflow.text.boundaries import skip_space, word_starts
from voxflow.text.chunking import SegmentEnd
from voxflow.text.language import TextLanguage
from voxflow.text.normalize.normalizer import Normalized

__all__ = ["PieceText", "split_spoken", "spoken_offset", "switch_points"]

_BREAK_AFTER = frozenset(",;:.!?")
# Japanese is written without spaces: a long spoken form is cut after its punctuation instead.
_JAPANESE_BREAKS = frozenset("、。！？，；：")


@dataclass(frozen=True)
class PieceText:
    """The text of one piece and where it came from.

    ``normalized`` is the spoken form of the written text at stream offsets
    ``[source_start, source_start + len(normalized.source))``; the piece speaks
    ``normalized.text[spoken_start:spoken_end]``. ``boundary`` is the seam after it.
    """

    source_start: int
    normalized: Normalized
    spoken_start: int
    spoken_end: int
    boundary: SegmentEnd

    @property
    def text(self) -> str:
        return self.normalized.text[self.spoken_start : self.spoken_end]

    @property
    def source_text(self) -> str:
        return self.normalized.source


def split_spoken(
    text: str, max_chars: int, first_chars: int | None = None
) -> list[tuple[int, int]]:
    """``text`` cut at whitespace (or after Japanese punctuation, ``、。``) into stripped ranges
    of at most ``max_chars`` characters each, each cut after punctuation when one lies in the
    second half of the range. A word longer than ``max_chars`` is cut inside. Whitespace-only
    text gives no ranges.

    ``first_chars``: when the text must be cut at all, its first range is at most this long (a
    first segment is waited for: its first piece's text stage is on the time to first audio).
    """
    ranges: list[tuple[int, int]] = []
    start = skip_space(text, 0)
    whole = len(text.rstrip()) - start <= max_chars
    while start < len(text):
        end = len(text.rstrip())
        size = max_chars if ranges or whole or first_chars is None else first_chars
        if end - start > size:
            limit = start + size
            spaces = [
                i
                for i in range(start + 1, limit + 1)
                if i < len(text) and (text[i].isspace() or text[i - 1] in _JAPANESE_BREAKS)
            ]
            if not spaces:
                end = limit
            else:
                half = start + size // 2
                marked = [
                    i
                    for i in spaces
                    if i >= half
                    and (text[i - 1] in _BREAK_AFTER or text[i - 1] in _JAPANESE_BREAKS)
                ]
                end = (marked or spaces)[-1]
        ranges.append((start, end))
        start = skip_space(text, end)
    return ranges


def spoken_offset(normalized: Normalized, source_pos: int) -> int:
    """Where the spoken rendering of the written text from ``source_pos`` begins."""
    for span in normalized.spans:
        if span.copied and span.src_start <= source_pos < span.src_end:
            return span.out_start + (source_pos - span.src_start)
        if span.src_start >= source_pos and span.src_end > span.src_start:
            return span.out_start
    return len(normalized.text)


def switch_points(
    lead: Normalized, whole: Normalized, language: TextLanguage = TextLanguage.ENGLISH
) -> tuple[tuple[int, int], ...]:
    """Where a rendering of ``whole`` may take over from a rendering of ``lead``.

    ``whole.source`` starts with ``lead.source``. A point pairs the spoken offsets, in ``lead``
    and in ``whole``, of the start of one written word of the lead (``word_starts``: for
    Japanese, each phrase of it, as the text has no spaces); it is kept only where both
    spoken forms agree on everything before it (normalization reads a few tokens in context, so
    the lead's last words may be spoken differently from the same words inside the sentence).
    The lead's start ``(0, 0)`` comes first and its end last: after the lead's last word, the
    whole's next word.
    """
    if not whole.source.startswith(lead.source):
        raise ValueError("the whole text must start with the lead's text")
    points = [(0, 0)]
    for start in word_starts(lead.source, language):
        in_lead = spoken_offset(lead, start)
        in_whole = spoken_offset(whole, start)
        if lead.text[:in_lead].rstrip() == whole.text[:in_whole].rstrip() and in_lead > 0:
            points.append((in_lead, in_whole))
    after = skip_space(whole.source, len(lead.source))
    end = (len(lead.text), spoken_offset(whole, after))
    # Points must not go backwards (a disagreement can place a whole-offset late).
    points = [p for p in points if p[0] <= end[0] and p[1] <= end[1]]
    return (*points, end)
