"""Collecting an admitted request's windows as they are rendered, for the phrase cache.

A stream renders an utterance in windows, in order, from where its rendering starts: ``lead_in``
for a segment or a lead, the switch point for a takeover. A ``Recording`` keeps those windows
while they follow one another; a gap (never expected, but a recording must not glue audio that
does not belong together) ends it. What is recorded is the exact audio the listener got, so a
later hit is sample-identical to this rendering.

A takeover's recording starts at its switch point: the frames before it were spoken by its lead;
a lead's recording stops where its takeover took over. ``missing`` says which frames a whole
phrase still needs, before and after what was recorded; the scheduler renders them when it has
nothing due (``voxflow.runtime.cache.background``) and ``complete`` joins them on. So a sentence
that streamed as a lead and a takeover is kept whole, and so is its lead: the next reply that
opens with the same words starts from the cache while its own sentence renders, and takes over
from the cached lead at a word boundary as from any lead.
"""

from __future__ import annotations

import numpy as np

from voxflow.engines.base import FloatArray, Utterance
from voxflow.runtime.cache.phrases import CachedPhrase
from voxflow.runtime.handover import lead_in

__all__ = ["Recording"]


class Recording:
    def __init__(self, key: str, utterance: Utterance, start_frame: int) -> None:
        self.key = key
        self.utterance = utterance
        self.start_frame = start_frame
        self.end_frame = start_frame
        self._chunks: list[FloatArray] = []
        self.broken = False

    def add(self, start_frame: int, end_frame: int, audio: FloatArray) -> None:
        """A window ``[start_frame, end_frame)`` as rendered; a gap breaks the recording."""
        if self.broken or end_frame == start_frame:
            return
        if start_frame != self.end_frame:
            self.broken = True
            self._chunks.clear()
            return
        # A copy: the stream's listener gets ``audio`` and may work on it in place.
        self._chunks.append(audio.copy())
        self.end_frame = end_frame

    @property
    def reached_end(self) -> bool:
        return not self.broken and self.end_frame >= self.utterance.num_frames

    def missing(self) -> tuple[tuple[int, int] | None, tuple[int, int] | None]:
        """The frames a whole phrase still needs: before the recording (a takeover's head) and
        after it (a lead's tail); None for each side that is whole."""
        start = lead_in(self.utterance)
        head = (start, self.start_frame) if self.start_frame > start else None
        end = self.utterance.num_frames
        tail = (self.end_frame, end) if self.end_frame < end else None
        return head, tail

    def complete(
        self, head: FloatArray | None = None, tail: FloatArray | None = None
    ) -> CachedPhrase:
        """The whole phrase: ``head`` and ``tail`` are the audio of the frames ``missing`` named."""
        if self.broken:
            raise ValueError("a broken recording cannot be completed")
        before, after = self.missing()
        if (before is None) != (head is None) or (after is None) != (tail is None):
            raise ValueError("complete needs the audio of exactly the missing frames")
        chunks = [c for c in (head, *self._chunks, tail) if c is not None]
        start = self.start_frame if head is None else lead_in(self.utterance)
        audio = np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.float32)
        return CachedPhrase.of(self.utterance, start, audio.astype(np.float32, copy=False))
