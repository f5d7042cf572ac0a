"""A text stage that reads past what it says.

An engine's text stage plans a sentence's prosody from the text it is given: the last word it
sees is said as a sentence's last (lengthened, falling, then silence). A lead spoken as it is
(the first words of a sentence, with no takeover to replace them: Kokoro) would be said so,
and a short opener ("はい、", "Sure,") then sounds like a reply of its own that the next piece
starts over from. Given the text that follows (``lookahead``), the text stage plans the lead as
the start of its sentence, and ``spoken_part`` keeps only the lead's own words.

Invariants of ``spoken_part(utterance, chars)`` (checked by the tests):

* its words are exactly the utterance's words that end within ``text[:chars]``, with the same
  characters and frames, and its text is ``text[:chars]``;
* its frames are the utterance's first frames, unchanged, up to the last phoneme edge at or
  before halfway through the pause between its last word and the next (at a word boundary with
  no pause, the boundary itself), so it never holds any of the next word's own frames, and the
  frames an engine groups (Kokoro's come in pairs) stay whole;
* its phonemes are the utterance's first ones, whole, and their frames add up to its frames.
"""

from __future__ import annotations

import logging
from dataclasses import replace

import numpy as np

from voxflow.engines.base import Engine, Utterance, VoiceSettings

__all__ = ["prepare_reading_on", "spoken_part"]

log = logging.getLogger(__name__)


def prepare_reading_on(
    engine: Engine,
    text: str,
    lookahead: str,
    voice: str,
    settings: VoiceSettings,
    threads: int | None = None,
) -> Utterance:
    """``engine``'s text stage on ``text`` followed by ``lookahead``, keeping ``text``'s part
    (``spoken_part``). On ``text`` alone without a lookahead, and when the longer reading does
    not part at ``text``'s end: a word read across it, or no word before it, would leave some
    of ``text`` unsaid."""
    if lookahead:
        read_on = engine.prepare(text + lookahead, voice, settings, threads)
        cut = len(text)
        words = read_on.words
        if any(w.char_end <= cut for w in words) and not any(
            w.char_start < cut < w.char_end for w in words
        ):
            return spoken_part(read_on, cut)
        log.debug("%r read on into %r parts elsewhere: read alone", text, lookahead)
    return engine.prepare(text, voice, settings, threads)


def spoken_part(utterance: Utterance, chars: int) -> Utterance:
    """The part of ``utterance`` that says its text's first ``chars`` characters (module
    docstring); the utterance itself when its words all lie there."""
    own = [word for word in utterance.words if word.char_end <= chars]
    if len(own) == len(utterance.words):
        return utterance
    if not own:
        raise ValueError(f"no word of {utterance.text!r} ends within its first {chars} characters")
    last, following = own[-1].end_frame, utterance.words[len(own)].start_frame
    halfway = last + max(0, following - last) // 2
    # Cut at a phoneme's edge: the frames an engine groups (Kokoro's come in pairs) stay whole.
    edges = np.cumsum(utterance.phoneme_frames)
    kept = int(np.searchsorted(edges, halfway, side="right"))  # phonemes that end by halfway
    end = int(edges[kept - 1]) if kept else 0
    if end < last:
        raise ValueError(f"the words of {utterance.text!r} do not end at phoneme edges")
    return replace(
        utterance,
        text=utterance.text[:chars],
        latents=np.ascontiguousarray(utterance.latents[:, :end]),
        phonemes=utterance.phonemes[:kept],
        phoneme_frames=utterance.phoneme_frames[:kept].copy(),
        words=tuple(own),
    )
