"""Character alignment per audio chunk, in the shape ElevenLabs' APIs report it.

The session core gives word timings (``TimestampsOut``: words on the context's audio timeline,
characters indexing everything the client sent) ahead of the audio they describe, and audio
chunks (``AudioOut``: offset and duration on the same timeline). ElevenLabs clients expect, with
each audio chunk, the characters spoken in it with a start time and a duration each. A
``CharAligner`` per context turns the first into the second:

* every character of the client's text gets a time: a word's characters split its span evenly;
  characters between two words of a segment (spaces, punctuation) share the pause between them;
  punctuation right after a segment's last word, and the whitespace after it, sit at that word's
  end with no duration; anything else before a segment's first word (whitespace that arrived after
  the previous segment was cut, or text the engine did not voice as a word) sits at that word's
  start with no duration;
* a character goes out exactly once, with the first chunk whose end is after its start;
* ``finish`` hands over whatever is left when the context ends (text after the last word that was
  never voiced), so the characters of all chunks concatenate to exactly the client's text: word
  splitting on spaces (as Pipecat does) then sees the same words the client sent.

Pure logic: no I/O, no clock.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

from voxflow.session.events import AudioOut, TimestampsOut, WordTiming


@dataclass(frozen=True)
class TimedChar:
    char: str
    start_ms: float  # on the context's audio timeline
    duration_ms: float


@dataclass(frozen=True)
class ChunkAlignment:
    """The characters first heard in one audio chunk, which starts at ``offset_ms``."""

    offset_ms: float
    chars: tuple[TimedChar, ...]

    @property
    def text(self) -> str:
        return "".join(c.char for c in self.chars)

    def relative_starts_ms(self) -> list[int]:
        """Start times in whole milliseconds from the chunk's start, as ElevenLabs' WebSocket
        reports them; a character that started in an earlier chunk is clamped to 0."""
        return [max(0, round(c.start_ms - self.offset_ms)) for c in self.chars]

    def absolute_starts_ms(self) -> list[int]:
        """Start times in whole milliseconds from the start of the context's audio."""
        return [max(0, round(c.start_ms)) for c in self.chars]

    def durations_ms(self) -> list[int]:
        return [max(0, round(c.duration_ms)) for c in self.chars]


class CharAligner:
    """Assigns the characters of one context to its audio chunks (see the module docstring)."""

    def __init__(self) -> None:
        self._pending: deque[TimedChar] = deque()
        self._cursor = 0  # characters of the text before this index have a time
        self._last_start = 0.0  # keeps start times monotonic whatever the engine reports
        self._audio_end = 0.0
        self._text = ""

    def add(self, timestamps: TimestampsOut, text: str) -> None:
        """Time the characters of one segment; ``text`` is everything the client sent so far."""
        self.add_words(timestamps.words, text)

    def add_words(self, words: Sequence[WordTiming], text: str) -> None:
        self._text = text
        previous_end: float | None = None
        for word in words:
            start = max(word.char_start, self._cursor)
            end = min(max(word.char_end, start), len(text))
            if start > self._cursor:
                gap = text[self._cursor : start]
                if previous_end is None:
                    self._spread(gap, word.start_ms, word.start_ms)
                else:
                    self._spread(gap, previous_end, max(previous_end, word.start_ms))
            self._spread(text[start:end], word.start_ms, max(word.start_ms, word.end_ms))
            self._cursor = max(self._cursor, end)
            previous_end = max(word.start_ms, word.end_ms)
        if previous_end is None:
            return
        # The segment's closing punctuation and the whitespace after it belong to its last word:
        # a client that splits words on spaces needs that space to see the last word complete.
        tail = self._cursor
        while tail < len(text) and not text[tail].isspace() and not text[tail].isalnum():
            tail += 1
        while tail < len(text) and text[tail].isspace():
            tail += 1
        self._spread(text[self._cursor : tail], previous_end, previous_end)
        self._cursor = tail

    def take(self, audio: AudioOut) -> ChunkAlignment:
        """The characters that start before the end of ``audio`` and were not given out yet."""
        end = audio.offset_ms + audio.duration_ms
        self._audio_end = max(self._audio_end, end)
        chars = []
        while self._pending and self._pending[0].start_ms < end:
            chars.append(self._pending.popleft())
        return ChunkAlignment(audio.offset_ms, tuple(chars))

    def finish(self, text: str | None = None) -> ChunkAlignment:
        """Everything not given out yet, placed at the end of the audio (the context is done)."""
        if text is not None:
            self._text = text
        leftover = self._text[self._cursor :]
        self._cursor = len(self._text)
        self._spread(leftover, self._audio_end, self._audio_end)
        chars = tuple(self._pending)
        self._pending.clear()
        return ChunkAlignment(self._audio_end, chars)

    def _spread(self, chars: str, start_ms: float, end_ms: float) -> None:
        """Give ``chars`` equal shares of ``[start_ms, end_ms)``."""
        if not chars:
            return
        step = (end_ms - start_ms) / len(chars)
        for i, char in enumerate(chars):
            at = max(self._last_start, start_ms + i * step)
            self._last_start = at
            self._pending.append(TimedChar(char, at, step))
