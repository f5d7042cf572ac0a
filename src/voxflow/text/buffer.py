"""Streaming TextBuffer: turns incrementally fed text into speakable segments.

Text arrives in arbitrary pieces (LLM tokens, keystrokes, whole paragraphs). The buffer finds
boundaries with its language's rules (``voxflow.text.segment`` for English,
``voxflow.text.segment_ja`` for Japanese) and emits a segment once the chunking rules say where
it ends *and* no further text could change that decision. The rules below read the same in
every language; only the boundaries and the spoken cost (``voxflow.text.phrases``) are the
language's. Lengths (schedule minimums, ``max_chars``) are given in English characters and
read in the language's (``voxflow.text.phrases.written_chars``: a third as many Japanese
characters, which carry as many phonemes); in the rules below they are the language's.

Invariants:

* Chunking independence: for any text and any way of cutting it into pieces, calling
  ``feed(piece)`` for each piece and then ``flush()`` yields exactly the same segments (text,
  start, end, boundary, index, turn_first, lead) as ``feed(whole)`` followed by ``flush()``.
  Decisions only read boundaries that are already final (see ``BoundaryScanner.settled``) and
  the text before them; a cut forced by ``max_chars`` is only taken once every boundary up to
  ``max_chars`` is known. The one rule that reads the clock, the look-ahead (below), only fires
  when no text arrived for ``lookahead_s``: pieces that arrive closer together than that give
  the same segments as the whole text.
* Offsets: ``start``/``end`` index the concatenation of all text ever fed to the buffer, and
  ``segment.text == stream[start:end]`` with no surrounding whitespace. Segments are strictly
  ordered and only whitespace lies between them, so no text is lost or duplicated.
* ``end - start <= max_chars`` for every segment; whitespace never forms a segment.
* Bounded first segment (adaptive strategy and auto mode, ``lead_cost=(low, high)``): the first
  segment of a turn never extends past the first word boundary whose spoken cost
  (``voxflow.text.phrases.spoken_cost`` of the text from the segment's start) exceeds ``high``,
  and ends before it when an earlier word boundary costs at least ``low``.
* ``feed`` costs time proportional to the new text (plus bounded lookbehind), not to the
  amount buffered.

Chunking rules, for segment ``i`` of a turn starting at its first non-space character ``s``:

* ``minimum = schedule[min(i, len(schedule) - 1)]`` (ElevenLabs ``chunk_length_schedule``
  semantics); characters from ``s`` for every strategy except ``word``, where it counts words.
* The segment ends at the first boundary at or past the minimum whose kind is acceptable:
  ``sentence`` accepts SENTENCE; ``adaptive`` accepts CLAUSE for the first segment of a turn and
  SENTENCE afterwards; ``fixed`` and ``word`` accept any boundary.
* If no acceptable boundary lies within ``max_chars``, the cut goes to the strongest (then
  latest) boundary within ``[minimum, max_chars]``; failing that the latest boundary within
  ``max_chars``; failing that a hard cut at exactly ``max_chars`` (``SegmentEnd.CUT``).
* Default schedules: sentence ``(1,)``; adaptive ``(20, 60)`` (a quick first segment, then whole
  sentences of at least 60 characters, so short sentences are merged; entries are capped at
  ``max_chars``); fixed ``(fixed_chars,)``; word ``(words_per_chunk,)`` words. An explicit
  schedule replaces the minimums only.
* ``auto_mode`` ignores strategy and schedule: every confirmed SENTENCE boundary ends a segment.
* The first segment of a turn (adaptive and auto mode) is what the listener waits for, and its
  text stage costs about 0.6 ms per spoken character, so its cost is bounded by ``lead_cost``
  ``(low, high)``. Examining its boundaries in order, with ``c`` the spoken cost up to each:

  - a SENTENCE boundary (at any length, whatever the minimum) or an acceptable CLAUSE (past
    the minimum) ends it while ``c <= high``;
  - a CLAUSE with ``low <= c <= high`` ends it (auto mode, where clauses are not acceptable);
  - a word boundary with ``low <= c <= high`` before a word that opens a phrase (a conjunction,
    preposition or relative word, ``voxflow.text.phrases.starts_phrase``) ends it, decided once
    that word is complete; so does one with ``low <= c <= high`` after text that ends a phrase
    (a Japanese bunsetsu closed by a particle, ``voxflow.text.phrases.ends_phrase``), decided
    at once;
  - once ``c > high`` (or the text settled so far already costs more, so no later boundary
    can be inside the window), it ends at the latest boundary with ``low <= c <= high``; with
    none there, at the first boundary past ``high``.

  A first segment that ends inside a sentence (anything but SENTENCE) is marked ``lead``: the
  next segment finishes the sentence, and the session renders the sentence whole beside it.
  The segment after a lead ends at the first sentence end, whatever the minimum: it is that
  sentence's takeover, and the next sentence need not wait for it.
* ``hurry``: the listener is about to run out of audio in the middle of a turn (a short opener,
  "Sure thing!", has been said while the next sentence is still arriving). The segment under
  construction is then cut as a turn's first segment is, with the lead window over the text
  from its start: at once when what has arrived decides it, else as soon as the text that
  arrives does. A lead cut so is marked ``lead`` like a first one. The segment that finishes
  a lead's sentence is not hurried when the session renders that sentence again whole (its
  takeover must cover it); without takeovers (``TextBuffer(..., takeovers=False)``: Kokoro,
  which says the rest of a lead's sentence as a piece of its own) it is, so that an LLM that
  pauses mid-sentence after a lead cannot leave the listener with nothing.
* Look-ahead (``lookahead_s``): a sentence end at the very end of the buffered text is only
  confirmed by the next word. When nothing arrives for ``lookahead_s`` after it, ``poll`` takes
  it as confirmed (if it would end a sentence before a capital: not "Dr." or "e.g.") and emits
  everything up to it as one SENTENCE segment, whatever the minimum: a reply that paused or
  ended is not held back waiting for a token that may never come. The turn goes on. In auto
  mode the wait is shorter (``ChunkingConfig.effective_lookahead_s``): the client sends whole
  sentences.
* ``flush`` emits everything buffered as one ``FLUSH`` segment and starts a new turn: the
  segment index returns to 0. It never needs to split: ``feed`` already cut anything that
  exceeded ``max_chars``, since such a cut is certain once ``max_chars`` is exceeded.
  ``restart_turn`` starts a new turn without emitting, when nothing is buffered. ``cut``
  emits everything buffered as one segment with the boundary it is given, and the turn goes on
  (markup's segment ends: ``voxflow.session.markup``).
"""

import bisect
import time
from dataclasses import dataclass

from voxflow.text.boundaries import boundary_rules
from voxflow.text.chunking import (
    ChunkingConfig,
    Segment,
    SegmentEnd,
    Strategy,
)
from voxflow.text.language import TextLanguage
from voxflow.text.phrases import ends_phrase, spoken_cost, starts_phrase, written_chars
from voxflow.text.segment import Boundary, BoundaryKind, BoundaryScanner

__all__ = ["TextBuffer", "segment_text"]

# What a text that ``cut`` ends without a sentence end may end with to end at a clause.
_CLAUSE_ENDS: dict[TextLanguage, frozenset[str]] = {
    TextLanguage.ENGLISH: frozenset(",;:—–"),
    TextLanguage.JAPANESE: frozenset(",;:—–、､，；："),
}


@dataclass(frozen=True)
class _Priced:
    """A boundary of the first segment and the spoken cost of the text up to it."""

    boundary: Boundary
    cost: int


class TextBuffer:
    """Accumulates fed text and releases segments according to a ``ChunkingConfig``."""

    def __init__(
        self,
        config: ChunkingConfig,
        takeovers: bool = True,
        language: TextLanguage = TextLanguage.ENGLISH,
    ) -> None:
        """``takeovers``: whether a lead's sentence is rendered again whole, so that the
        segment finishing it is never hurried (module docstring). ``language``: whose
        boundaries and spoken costs the text has."""
        self._config = config
        self._takeovers = takeovers
        self._language = language
        self._counts_words = config.strategy is Strategy.WORD and not config.auto_mode
        self._schedule = self._written(config)
        self._max_chars = written_chars(config.max_chars, language)
        self._leads = config.leads
        self._scanner = BoundaryScanner(boundary_rules(language))
        # Confirmed boundaries after the last cut, in order.
        self._pending: list[Boundary] = []
        self._cut = 0  # everything before this stream offset has been emitted or skipped
        self._index = 0  # index of the next segment in the turn
        self._content: int | None = None  # first non-space offset at or after the cut
        self._no_content_before = 0  # only whitespace lies in [cut, this)
        self._last_feed: float | None = None
        # Search state for the segment under construction; kept across feeds so that each
        # boundary is examined once.
        self._examined = 0
        self._best: Boundary | None = None
        self._latest: Boundary | None = None
        # Lead search (first segment of a turn only): the previous boundary examined, the latest
        # one inside the lead window, and whether the window has been passed.
        self._lead_previous: _Priced | None = None
        self._lead_fallback: _Priced | None = None
        self._lead_passed = False
        self._hurried = False  # the segment under construction is cut as a first one
        self._after_lead = False  # the segment under construction finishes a lead's sentence

    @property
    def config(self) -> ChunkingConfig:
        return self._config

    def _written(self, config: ChunkingConfig) -> tuple[int, ...]:
        """The schedule's minimums in the language's characters (word counts stay counts);
        after ``_counts_words`` is set for ``config``."""
        if self._counts_words:
            return config.effective_schedule
        return tuple(written_chars(m, self._language) for m in config.effective_schedule)

    @property
    def language(self) -> TextLanguage:
        return self._language

    def reconfigure(self, config: ChunkingConfig) -> None:
        """Cut by ``config`` from here on; only while nothing is buffered (after a ``cut``), so
        no segment is cut by two rules."""
        if self.has_content:
            raise ValueError("the buffer holds text: cut it before changing how it cuts")
        self._config = config
        self._counts_words = config.strategy is Strategy.WORD and not config.auto_mode
        self._schedule = self._written(config)
        self._max_chars = written_chars(config.max_chars, self._language)
        self._leads = config.leads
        self._restart_search()

    @property
    def buffered(self) -> str:
        """Text fed but not yet emitted (including whitespace after the last segment)."""
        return self._scanner.text(self._cut, self._scanner.end)

    @property
    def can_hurry(self) -> bool:
        """Whether ``hurry`` would do anything: text waits, there is a lead window, and the
        segment under construction neither is hurried already nor finishes a lead's sentence
        that a takeover renders again."""
        return (
            self._leads is not None
            and not self._hurried
            and not (self._after_lead and self._takeovers)
            and self.has_content
        )

    @property
    def has_content(self) -> bool:
        """Whether non-space text is waiting to be emitted."""
        return self._locate_content() is not None

    def feed(self, text: str, now: float | None = None) -> list[Segment]:
        """Add ``text`` and return the segments that became ready, in order.

        ``now`` (seconds, same clock as ``poll``) defaults to ``time.monotonic()``.
        """
        if not text:
            return []
        self._last_feed = time.monotonic() if now is None else now
        confirmed = self._scanner.feed(text)
        self._pending.extend(b for b in confirmed if b.pos > self._cut)
        out: list[Segment] = []
        while (segment := self._next_segment()) is not None:
            out.append(segment)
        return out

    def flush(self) -> list[Segment]:
        """Emit everything buffered as one ``FLUSH`` segment and start a new turn.

        A cut forced by ``max_chars`` is taken by ``feed`` as soon as it is certain, which is
        whenever the buffered content exceeds ``max_chars``; so the remainder always fits.
        """
        out: list[Segment] = []
        start = self._locate_content()
        if start is not None:
            out.append(self._emit(start, self._scanner.settled, SegmentEnd.FLUSH))
        self._cut = self._scanner.end
        self._pending.clear()
        self._start_segment()
        self._scanner.release(self._cut)
        self._index = 0
        self._after_lead = False
        return out

    def cut(self, boundary: SegmentEnd | None = None) -> list[Segment]:
        """Emit everything buffered as one segment that ends at ``boundary`` (None: at what the
        text itself ends with, a sentence, a clause or a word); the turn goes on.

        Markup decides such an end (an SSML break, a change of speaking rate, the end of a
        ``<s>``): the segment is never a lead, since no takeover may render across it. Like
        ``flush`` it never needs to split.
        """
        out: list[Segment] = []
        start = self._locate_content()
        if start is not None:
            end = self._scanner.settled
            if boundary is None:
                boundary = self._end_kind(end)
            out.append(self._emit(start, end, boundary, lead=False))
        self._cut = self._scanner.end
        self._pending.clear()
        self._start_segment()
        self._scanner.release(self._cut)
        return out

    def _end_kind(self, end: int) -> SegmentEnd:
        """How the settled text ending at ``end`` ends, as a boundary there would."""
        if self._scanner.sentence_at_end() is not None:
            return SegmentEnd.SENTENCE
        if self._scanner.text(end - 1, end) in _CLAUSE_ENDS[self._language]:
            return SegmentEnd.CLAUSE
        return SegmentEnd.WORD

    def hurry(self) -> list[Segment]:
        """Cut the segment under construction as a turn's first segment is cut (see the module
        docstring); returns the segments that became ready (none when the text that has
        arrived does not decide the cut yet: ``feed`` returns it then). No-op without a lead
        window (``ChunkingConfig.leads``), while a lead's sentence that a takeover renders is
        unfinished, or when nothing is buffered."""
        if not self.can_hurry:
            return []
        self._hurried = True
        self._restart_search()
        out: list[Segment] = []
        while (segment := self._next_segment()) is not None:
            out.append(segment)
        return out

    def restart_turn(self) -> None:
        """Start a new turn (the next segment is a first segment again) if nothing is buffered;
        for text that resumes after the listener has heard everything so far."""
        if self._locate_content() is None:
            self._index = 0
            self._after_lead = False
            self._start_segment()

    def poll(self, now: float) -> list[Segment]:
        """Flush if the idle deadline has passed, or emit a sentence whose look-ahead expired;
        otherwise return nothing."""
        idle = self._idle_flush_at()
        if idle is not None and now >= idle:
            return self.flush()
        lookahead = self._lookahead_at()
        if lookahead is None or now < lookahead:
            return []
        start = self._locate_content()
        end = self._scanner.sentence_at_end()
        if start is None or end is None:
            return []
        return [self._emit(start, end.pos, SegmentEnd.SENTENCE)]

    def idle_deadline(self) -> float | None:
        """When ``poll`` would emit something, or None if it never would without more text."""
        deadlines = [d for d in (self._idle_flush_at(), self._lookahead_at()) if d is not None]
        return min(deadlines, default=None)

    def _idle_flush_at(self) -> float | None:
        idle = self._config.idle_flush_s
        if idle is None or self._last_feed is None or self._locate_content() is None:
            return None
        return self._last_feed + idle

    def _lookahead_at(self) -> float | None:
        wait = self._config.effective_lookahead_s
        if wait is None or self._last_feed is None or self._locate_content() is None:
            return None
        if self._scanner.sentence_at_end() is None:
            return None
        return self._last_feed + wait

    def _rule(self) -> tuple[int, BoundaryKind]:
        """Minimum length and weakest acceptable boundary for the next segment."""
        if self._config.auto_mode:
            return 1, BoundaryKind.SENTENCE
        minimum = self._schedule[min(self._index, len(self._schedule) - 1)]
        match self._config.strategy:
            case Strategy.SENTENCE:
                accept = BoundaryKind.SENTENCE
            case Strategy.ADAPTIVE:
                accept = BoundaryKind.CLAUSE if self._index == 0 else BoundaryKind.SENTENCE
            case Strategy.FIXED | Strategy.WORD:
                accept = BoundaryKind.WORD
        return minimum, accept

    def _next_segment(self) -> Segment | None:
        """The next segment if its end is already certain, else None."""
        start = self._locate_content()
        if start is None:
            return None
        minimum, accept = self._rule()
        limit = start + self._max_chars
        first = self._leads is not None and (self._index == 0 or self._hurried)
        leading = first and not self._lead_passed
        while self._examined < len(self._pending):
            boundary = self._pending[self._examined]
            if boundary.pos > limit:
                return self._fallback(start)
            measure = self._examined + 1 if self._counts_words else boundary.pos - start
            acceptable = measure >= minimum and boundary.kind >= accept
            if (first or self._after_lead) and boundary.kind is BoundaryKind.SENTENCE:
                # A whole first sentence is the best first segment, if short; a lead's
                # sentence ends its takeover.
                acceptable = True
            if leading:
                cut = self._lead_cut(start, boundary, acceptable)
                if cut is not None:
                    return cut
                leading = not self._lead_passed
            self._examined += 1
            if acceptable:
                return self._emit(start, boundary.pos, SegmentEnd(boundary.kind))
            if measure >= minimum and (self._best is None or boundary.kind >= self._best.kind):
                # Positions only grow, so >= keeps the latest of the strongest.
                self._best = boundary
            self._latest = boundary
        if self._scanner.settled > limit:
            return self._fallback(start)
        if leading and self._lead_fallback is not None and self._past_window(start):
            # No boundary still to come can lie inside the window: the choice is final now,
            # without waiting for the end of a long word ("ZX48-9931-KQ") to confirm it.
            chosen = self._lead_fallback
            self._lead_passed = True
            return self._emit(start, chosen.boundary.pos, SegmentEnd(chosen.boundary.kind))
        return None

    def _past_window(self, start: int) -> bool:
        """Whether the settled text already costs more than the lead window's top (every
        boundary before ``settled`` has been examined, and later ones cost more)."""
        assert self._leads is not None
        high = self._leads[1]
        settled = self._scanner.settled
        if self._language is TextLanguage.ENGLISH and settled - start > high:
            return True  # an English character costs at least 1 (a small kana costs nothing)
        return spoken_cost(self._scanner.text(start, settled), self._language) > high

    def _lead_cut(self, start: int, boundary: Boundary, acceptable: bool) -> Segment | None:
        """Apply the first segment's cost bound at ``boundary`` (see the module docstring).

        Returns the segment to emit, or None to go on with the ordinary rules. Sets
        ``_lead_passed`` once the lead window lies behind, so the bound costs nothing after.
        """
        assert self._leads is not None
        low, high = self._leads
        before = self._scanner.text(start, boundary.pos)
        cost = spoken_cost(before, self._language)
        previous = self._lead_previous
        if acceptable and cost <= high:
            return None  # an ordinary end within the bound: the caller emits it
        if boundary.kind is BoundaryKind.CLAUSE and low <= cost <= high:
            return self._emit(start, boundary.pos, SegmentEnd.CLAUSE)
        if previous is not None and low <= previous.cost <= high:
            # The word after `previous` is complete now that `boundary` is confirmed.
            word = self._scanner.text(previous.boundary.pos, boundary.pos)
            if starts_phrase(word.strip(), self._language):
                return self._emit(start, previous.boundary.pos, SegmentEnd(previous.boundary.kind))
        if (
            boundary.kind is BoundaryKind.WORD
            and low <= cost <= high
            and ends_phrase(before, self._language)
        ):
            return self._emit(start, boundary.pos, SegmentEnd.WORD)
        priced = _Priced(boundary, cost)
        if cost > high:
            # Past the window: the latest boundary inside it, or this one when there is none
            # (a first word that costs more than the window, "For a $350,000 loan ...").
            self._lead_passed = True
            chosen = self._lead_fallback or priced
            return self._emit(start, chosen.boundary.pos, SegmentEnd(chosen.boundary.kind))
        if cost >= low:
            self._lead_fallback = priced
        self._lead_previous = priced
        return None

    def _fallback(self, start: int) -> Segment:
        """Cut a segment that found no acceptable boundary within max_chars."""
        choice = self._best if self._best is not None else self._latest
        if choice is None:
            return self._emit(start, start + self._max_chars, SegmentEnd.CUT)
        return self._emit(start, choice.pos, SegmentEnd(choice.kind))

    def _emit(self, start: int, end: int, kind: SegmentEnd, lead: bool = True) -> Segment:
        """``lead``: whether the segment may be a lead (when it is the first of its turn or
        hurried, and ends inside a sentence)."""
        first = self._index == 0
        lead = (
            lead
            and (first or self._hurried)
            and self._leads is not None
            and kind < SegmentEnd.SENTENCE
        )
        segment = Segment(
            text=self._scanner.text(start, end),
            start=start,
            end=end,
            boundary=kind,
            index=self._index,
            turn_first=first,
            lead=lead,
        )
        self._after_lead = lead
        self._index += 1
        self._cut = end
        del self._pending[: bisect.bisect_right(self._pending, end, key=_position)]
        self._start_segment()
        self._scanner.release(end)
        return segment

    def _start_segment(self) -> None:
        self._content = None
        self._no_content_before = self._cut
        self._hurried = False
        self._restart_search()

    def _restart_search(self) -> None:
        """Examine the segment's boundaries again from its start."""
        self._examined = 0
        self._best = None
        self._latest = None
        self._lead_previous = None
        self._lead_fallback = None
        self._lead_passed = False

    def _locate_content(self) -> int | None:
        if self._content is None:
            # Remember how far only whitespace was seen, so repeated polls stay cheap.
            self._content = self._scanner.find_content(self._no_content_before)
            if self._content is None:
                self._no_content_before = self._scanner.end
        return self._content


def segment_text(
    text: str, chunking: ChunkingConfig, language: TextLanguage = TextLanguage.ENGLISH
) -> list[Segment]:
    """All segments of a complete text in ``language``, as a session's text buffer cuts them."""
    buffer = TextBuffer(chunking, language=language)
    return [*buffer.feed(text), *buffer.flush()]


def _position(boundary: Boundary) -> int:
    return boundary.pos
