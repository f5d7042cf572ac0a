"""Where a takeover replaces its lead: the first word boundary the lead has not rendered past.

A *lead* is a short first piece of a sentence, rendered at once so that audio starts early; its
*takeover* renders the whole sentence beside it. The listener hears the lead's first words and
then, from a word boundary on, the whole sentence's rendering, so the rest of the sentence keeps
the intonation and rhythm of one utterance. Word boundaries are where speech is quietest (the
seam figures in docs/benchmarks.md), and the lead's frames up to one include the pause that
the lead itself put after the word.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from voxflow.engines.base import Utterance

__all__ = ["Switch", "choose_switch", "frame_at", "lead_in"]


def lead_in(utterance: Utterance) -> int:
    """Where rendering an utterance from its start begins: where its speech may begin, its
    engine's ``onset_frames`` before its first word. The silence before that is not rendered;
    what is rendered of it the seam joiner trims."""
    if not utterance.words:
        return 0
    return max(0, utterance.words[0].start_frame - utterance.onset_frames)


@dataclass(frozen=True)
class Switch:
    """The lead is heard for frames ``[0, lead_end)``, then the takeover from frame ``start``."""

    lead_end: int
    start: int


def frame_at(utterance: Utterance, char: int) -> int:
    """The first frame of the first word that starts at or after ``char`` of the utterance's
    text: frame 0 for ``char`` 0, the end of the utterance when no word starts there."""
    if char <= 0:
        return 0
    for word in utterance.words:
        if word.char_start >= char:
            return word.start_frame
    return utterance.num_frames


def choose_switch(
    lead: Utterance,
    takeover: Utterance,
    points: Sequence[tuple[int, int]],
    rendered: int,
) -> Switch:
    """The first switch point after frame ``rendered`` of the lead (what it has rendered or is
    rendering), or the lead's end when it has rendered past every point. A lead that has rendered
    nothing is dropped (the switch is at its start); otherwise at least one more of its frames is
    rendered, which the cross-fade at the switch needs."""
    for lead_char, own_char in points:
        lead_frame = frame_at(lead, lead_char)
        if lead_frame > rendered or lead_frame == rendered == 0:
            return Switch(lead_frame, frame_at(takeover, own_char))
    return Switch(lead.num_frames, frame_at(takeover, points[-1][1]))
