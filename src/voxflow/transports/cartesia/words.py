"""Cartesia's word timestamps and flush ids for one context (no I/O).

Word timestamps: the session times words of the client's text on the context's audio timeline
(``TimestampsOut``); Cartesia reports them as ``{"words", "start", "end"}`` in seconds from the
start of the context's audio, a word being written as in the transcript with the punctuation
attached to it (``"Hello,"``, ``"world!"``). Clients rebuild the spoken text from them (Pipecat
joins them with spaces; LiveKit finds each word in the text it sent), so a word is always a
substring of that text, and times never go back.

Flush ids: a ``flush: true`` request ends a group of transcripts; chunks and timestamps carry the
id of the group they speak (from 1), and ``flush_done`` follows a group's last audio. A flush ends
a voxflow segment, so the first word timed at or after a flush's position in the text starts the
next group: every chunk of the previous group has gone out before it (a window's timestamps go
out before its audio, and windows go out in order).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

from voxflow.session.events import WordTiming

__all__ = ["FlushIds", "TimedWords", "WordCursor"]


@dataclass(frozen=True)
class TimedWords:
    words: tuple[str, ...]
    start: tuple[float, ...]  # seconds from the start of the context's audio
    end: tuple[float, ...]


def _attached(char: str) -> bool:
    """Punctuation that belongs to the word it touches (neither a space nor a letter/digit)."""
    return not char.isspace() and not char.isalnum()


class WordCursor:
    """Turns a context's word timings into Cartesia's words, in order."""

    def __init__(self) -> None:
        self._floor = 0  # characters before this belong to words already reported
        self._last_start = 0.0

    def words(self, timings: Sequence[WordTiming], text: str) -> TimedWords:
        """``timings`` (of one ``TimestampsOut``) as written words; ``text`` is everything the
        client sent to the context, which their characters index."""
        words: list[str] = []
        starts: list[float] = []
        ends: list[float] = []
        for i, timing in enumerate(timings):
            begin = max(timing.char_start, self._floor)
            end = min(max(timing.char_end, begin), len(text))
            limit = timings[i + 1].char_start if i + 1 < len(timings) else len(text)
            while begin > self._floor and _attached(text[begin - 1]):
                begin -= 1
            while end < min(limit, len(text)) and _attached(text[end]):
                end += 1
            if end <= begin:
                continue
            self._floor = end
            start_s = max(self._last_start, round(timing.start_ms / 1000.0, 3))
            self._last_start = start_s
            words.append(text[begin:end])
            starts.append(start_s)
            ends.append(max(start_s, round(timing.end_ms / 1000.0, 3)))
        return TimedWords(tuple(words), tuple(starts), tuple(ends))


class FlushIds:
    """The flush groups of one context: ``flush`` on the reader's side, the rest as events go
    out."""

    def __init__(self) -> None:
        self._bounds: deque[int] = deque()  # text positions of flushes not yet done
        self.current = 1  # the group being spoken

    def flush(self, position: int) -> None:
        """A flush after the first ``position`` characters of the context's text."""
        self._bounds.append(position)

    def reached(self, timings: Sequence[WordTiming]) -> list[int]:
        """The groups that end before these words (their ``flush_done`` go out first)."""
        finished: list[int] = []
        if not timings:
            return finished
        first = timings[0].char_start
        while self._bounds and first >= self._bounds[0]:
            self._bounds.popleft()
            finished.append(self.current)
            self.current += 1
        return finished

    def finish(self) -> list[int]:
        """Every group still open: the context is done."""
        finished = list(range(self.current, self.current + len(self._bounds)))
        self.current += len(self._bounds)
        self._bounds.clear()
        return finished
