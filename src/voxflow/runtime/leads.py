"""How a stream renders a lead and where its takeover takes over.

A lead is the short first piece of a sentence, rendered at once so that audio starts early; its
takeover renders the whole sentence and replaces the lead from a word boundary on
(``voxflow.runtime.handover``).

A lead whose takeover is not prepared yet is rendered sparingly, because whatever it has not
rendered yet can still be spoken by the takeover with the whole sentence's prosody: in windows of
at most twice the first window, no more than ``lead_hold_s`` ahead of the listener, and never its
last word (spoken as if it ended the sentence: lengthened, falling, then silence) until the
listener is about to run out (``LEAD_URGENT_S``). When the takeover is late, the lead is heard
whole and the takeover starts at the word after it.

The timing half of that rule (how far ahead, how large the windows) needs the stream's clock and
is applied by ``StreamState``; this module has what depends only on the utterances: where a held
lead stops, where rendering starts, and where the takeover switches in.
"""

from __future__ import annotations

from voxflow.runtime.handover import choose_switch, lead_in
from voxflow.runtime.work import Work

__all__ = [
    "LEAD_URGENT_S",
    "SPLICE_FRAMES",
    "hold_frame",
    "start_after_finished_lead",
    "switch_from_lead",
]

SPLICE_FRAMES = 1  # frames cross-faded where a takeover joins its lead mid-utterance
LEAD_URGENT_S = 0.35  # a held lead renders its last word when its listener has this much left


def hold_frame(work: Work, first_frames: int) -> int:
    """Where a held lead stops: one frame before its last word, so that the takeover may
    still switch in there (the switch needs one more frame of the lead to cross-fade). A
    lead too short to hold anything back (its hold would fall inside the first window of
    ``first_frames``) is not held."""
    utterance = work.utterance
    assert utterance is not None
    if len(utterance.words) < 2:
        return work.end
    hold = utterance.words[-1].start_frame - SPLICE_FRAMES
    return hold if hold >= first_frames else work.end


def start_after_finished_lead(takeover_work: Work, finished: Work | None) -> None:
    """Start a prepared takeover whose lead is no longer queued: after the lead's last word if
    the lead was rendered to its end (``finished``), else (it failed or is gone) from its start."""
    takeover = takeover_work.request.takeover
    assert takeover is not None and takeover_work.utterance is not None
    if finished is None or finished.request.tag != takeover.lead_tag:
        return
    assert finished.utterance is not None
    switch = choose_switch(
        finished.utterance, takeover_work.utterance, takeover.points, finished.utterance.num_frames
    )
    takeover_work.start = takeover_work.next = switch.start


def switch_from_lead(lead: Work, takeover_work: Work, rendered: int) -> None:
    """Fix where a prepared takeover replaces ``lead``, which has rendered (or is rendering) its
    frames up to ``rendered``: the lead's end becomes final and both get the splice frames."""
    takeover = takeover_work.request.takeover
    own = takeover_work.utterance
    assert takeover is not None and own is not None and lead.utterance is not None
    switch = choose_switch(lead.utterance, own, takeover.points, rendered)
    lead.end = max(switch.lead_end, lead.next)
    lead.decided = True
    splice = 0
    if 0 < switch.lead_end < lead.utterance.num_frames and switch.start >= SPLICE_FRAMES:
        splice = SPLICE_FRAMES
    lead.continues = splice > 0
    takeover_work.splice = splice
    start = lead_in(own) if switch.start == 0 else switch.start - splice
    takeover_work.start = takeover_work.next = start
