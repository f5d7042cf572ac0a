"""One synthesis context: its text buffer, pieces in flight, audio clock and word timeline.

A context turns text into ``SegmentRequest``s (one per *piece*, ``voxflow.session.pieces``) and
scheduler results into client events. Its audio timeline is continuous across segments and
turns: ``offset_ms`` of every chunk and ``start_ms`` of every word are measured from the context's
first sample, and word characters index the concatenation of all text the client sent to it.

A first segment cut inside a sentence (``Segment.lead``) is rendered as a *lead*; the segment
that finishes the sentence is rendered as the whole sentence and takes over from the lead at a
word boundary that the scheduler picks. The lead's last frame and the takeover's frame before
its first word are cross-faded, and from there on the two are one segment for the seam joiner.

A context never lets its listener run dry while text is waiting: it pictures the listener's
playback (``voxflow.session.listener``) and knows how much audio its submitted pieces still
hold; ``hurry_margin_s`` before that would all have played, it has the buffer cut a lead from
the text that has arrived (``TextBuffer.hurry``), at any point of a turn. The whole sentence
then takes over from it, as at the start of a turn.

A context may read its text as markup (``ContextOptions.markup``, ``voxflow.session.markup``):
its ``text`` is then the written text, markup left out, and word timings index that. Markup
ends segments where a pause, a rate or a volume changes; each piece carries its own
``Delivery`` (speed, gain, the pause after a sentence), which ``set_delivery`` also changes
mid-context, from the text that follows.
"""

from __future__ import annotations

import enum
import math
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from voxflow.audio.encoders import StreamEncoder
from voxflow.audio.fades import crossfade
from voxflow.audio.formats import OutputFormat
from voxflow.audio.seam_settings import JoinKind, SeamSettings
from voxflow.audio.seams import SeamJoiner
from voxflow.engines.base import (
    MAX_SPEED,
    MIN_SPEED,
    FloatArray,
    Utterance,
    VoiceSettings,
    WordSpan,
)
from voxflow.runtime.jobs import Prepared, Rendered, SegmentRequest, Takeover
from voxflow.session.encoding import Encoded, EncodeJob, EncodeStep
from voxflow.session.events import AudioOut, ContextMetrics, TimestampsOut, WordTiming
from voxflow.session.listener import ListenerClock
from voxflow.session.markup import Cut, Markup, MarkupStep, Pause, Restyle, Written
from voxflow.session.pieces import PieceText, split_spoken, switch_points
from voxflow.session.timings import word_timings
from voxflow.text.boundaries import next_word_end
from voxflow.text.buffer import TextBuffer
from voxflow.text.chunking import ChunkingConfig, Segment, SegmentEnd, every_sentence
from voxflow.text.language import TextLanguage
from voxflow.text.normalize.normalizer import NormalizationMode, Normalized, Normalizer
from voxflow.text.phrases import spoken_cost, written_chars
from voxflow.text.ssml import SsmlDialect, Style

DEFAULT_MAX_PIECE_CHARS = 300
"""Spoken characters per engine call: ~650 phoneme ids, a text stage of ~200 ms and a few tens
of MiB (its memory grows with the square of its input)."""

DEFAULT_HURRY_MARGIN_S = 0.5
"""How long before its listener would run out of audio a context cuts a lead from the text that
has arrived (``Context.hurry_at``): the lead's text stage and first window wait behind other
calls' windows on a loaded machine (at twice the capacity of ``voxflow bench --calls``, 0.35 s
left 0.3 to 0.5% of the audio as gaps, 0.5 s under 0.1%)."""

KOKORO_HURRY_MARGIN_S = 0.7
"""The same for a Kokoro voice: its lead's text stage and first window take about half a
second on the 2-core machine."""

OPEN_GRACE_S = 5.0
"""How long a context that has said nothing yet counts as speaking for admission: one opened
for a turn gets its text within milliseconds, and a burst of them must not all look idle."""

FIRST_PIECE_CHARS = 80
"""The first piece of a turn's first segment, when that segment must be cut into pieces at all
(a long run of digits, a giant token): its text stage is what the listener waits for."""


# The seam joiner's pause for each way a segment can end: the audio layer has its own type, since
# it must not import text; a hard cut inside a word is joined like a word cut (no pause).
_JOIN_KINDS = {
    SegmentEnd.CUT: JoinKind.WORD,
    SegmentEnd.WORD: JoinKind.WORD,
    SegmentEnd.CLAUSE: JoinKind.CLAUSE,
    SegmentEnd.SENTENCE: JoinKind.SENTENCE,
    SegmentEnd.FLUSH: JoinKind.FLUSH,
}


def join_kind(boundary: SegmentEnd | None) -> JoinKind | None:
    """How the seam joiner joins onto a segment that ended at ``boundary`` (None: no pause)."""
    return None if boundary is None else _JOIN_KINDS[boundary]


@dataclass(frozen=True)
class ContextOptions:
    voice: str
    output_format: OutputFormat
    settings: VoiceSettings
    chunking: ChunkingConfig
    source_rate: int  # the voice's sample rate
    seams: SeamSettings
    normalizer: Normalizer
    normalization: NormalizationMode
    max_piece_chars: int = DEFAULT_MAX_PIECE_CHARS
    hurry_margin_s: float | None = DEFAULT_HURRY_MARGIN_S  # None: never cut a lead mid-turn
    # Whether the rest of a sentence whose first part was cut early is rendered as the whole
    # sentence taking over from that part (else the rest is a piece of its own).
    takeovers: bool = True
    markup: SsmlDialect | None = None  # None: the text is plain text
    # The voice's text language: how the buffer cuts the text (``normalizer`` is the same
    # language's).
    language: TextLanguage = TextLanguage.ENGLISH
    volume: float = 1.0  # a linear gain on the voice's audio
    sentence_pause_ms: float | None = None  # None: ``seams``' own


@dataclass(frozen=True)
class Delivery:
    """How a piece is spoken: its speed (``VoiceSettings.speed``), a linear gain, and the pause
    before it when the text before it ended a sentence (None: the seam settings' own)."""

    speed: float
    gain: float
    sentence_pause_ms: float | None = None

    def styled(self, style: Style) -> Delivery:
        """This delivery with markup's rate and volume factors on it (the speed kept inside
        ``VoiceSettings``' range)."""
        speed = min(MAX_SPEED, max(MIN_SPEED, self.speed * style.rate))
        return replace(self, speed=speed, gain=self.gain * style.volume)


class ContextState(enum.Enum):
    OPEN = "open"
    ENDING = "ending"  # ``end`` received: finishing the audio, then ``done``
    FINISHING = "finishing"  # everything rendered: its last encoder steps are running


@dataclass(eq=False)
class _Piece:
    """A submitted request and what its results have told so far."""

    text: PieceText
    lead: bool
    delivery: Delivery
    pause_ms: float | None = None  # markup's pause before it, in place of its boundary's
    utterance: Utterance | None = None
    timed: int = 0  # the utterance's words handled (timed, or skipped as the lead's)
    first_frame: int = 0  # words that start before this frame were spoken by the lead
    sample_offset: int = 0  # the seam joiner's sample index of the utterance's sample 0
    sent_to: int = 0  # frames whose audio has gone out to the client
    takes_over: _Piece | None = None  # the lead this piece takes over from
    taken_over: bool = False  # a lead whose takeover was submitted

    def audio_left_s(self) -> float:
        """Audio of this piece not sent yet, up to its last word's end (the seam joiner trims
        the silence after it); a takeover not started counts from where its lead has got to
        (the two speak the same words up to there)."""
        utterance = self.utterance
        assert utterance is not None
        sent = self.sent_to
        if self.takes_over is not None and sent == 0:
            sent = self.takes_over.sent_to
        end = utterance.words[-1].end_frame if utterance.words else utterance.num_frames
        frames = max(0, min(end, utterance.num_frames) - sent)
        return frames * utterance.samples_per_frame / utterance.sample_rate


@dataclass(frozen=True, eq=False)
class _Queued:
    """An encoder step sent off, and what to send with its result: the word timings (timed
    without the codec's inserted samples, which only the result tells), the piece and frame its
    audio reaches, and whether the step ends the context."""

    job: EncodeJob
    words: tuple[WordTiming, ...] = ()
    piece: _Piece | None = None
    end_frame: int = 0


class Context:
    """State of one context; driven by ``Session``."""

    def __init__(self, context_id: str, serial: int, options: ContextOptions, now: float) -> None:
        self.id = context_id
        self.serial = serial
        self.options = options
        self.state = ContextState.OPEN
        self.buffer = TextBuffer(
            options.chunking, takeovers=options.takeovers, language=options.language
        )
        # Only the encode jobs touch the encoder (off the event loop, one at a time, in order).
        self._encoder = StreamEncoder(options.output_format, options.source_rate)
        self._queued: deque[_Queued] = deque()
        self.text = ""  # everything the client sent, in order
        self.created_at = now
        self.first_text_at: float | None = None
        self.first_audio_at: float | None = None
        self._pieces: dict[int, _Piece] = {}
        self._next_tag = 0
        self._finished = 0
        self._lead: tuple[int, _Piece] | None = None  # a lead waiting for its takeover
        # The lead's last samples, held back to be cross-faded with its takeover's first ones,
        # and the joiner sample index just past them.
        self._held: FloatArray | None = None
        self._held_end = 0
        # Piece audio goes through the joiner (silence trimmed, set pauses); word timings use
        # its map, so they are sent with the first audio of their piece, not at `Prepared`.
        self.joiner = SeamJoiner(options.source_rate, options.seams)
        self._previous_boundary: SegmentEnd | None = None
        self._out_samples = 0  # output-rate samples sent so far (timeline for chunks)
        self._out_rate = options.output_format.sample_rate
        self._seq = 0
        self._synth_s = 0.0
        self._first_cached: bool | None = None  # the metrics' TTFA split by cache hit or miss
        self._first_text_end: int | None = None  # characters in when the first segment was cut
        self._misses = 0
        self.words: list[WordTiming] = []
        self.listener = ListenerClock()
        self._markup = (
            Markup(options.markup, options.normalizer) if options.markup is not None else None
        )
        self._delivery = Delivery(options.settings.speed, options.volume, options.sentence_pause_ms)
        self._style = Style(1.0, 1.0)  # markup's factors on ``_delivery``
        self._pause_ms: float | None = None  # markup's pause before the next piece
        # When the listener ran out of audio, if it has since then and no piece came after.
        self._quiet_since: float | None = None
        # When it came to owe audio (a piece submitted while it owed none) and when its last
        # audio went out: what each audio's ``quiet_s`` counts from.
        self._owed_since: float | None = None
        self._last_audio_at: float | None = None

    # -- text in ---------------------------------------------------------------------------------

    def add_text(self, text: str, now: float) -> list[SegmentRequest]:
        """The requests ``text`` makes due; with markup, ``SsmlError`` if it is bad (and
        nothing of it is taken)."""
        steps: list[MarkupStep] = (
            self._markup.feed(text) if self._markup is not None else [Written(text, text)]
        )
        if self.idle and self.first_audio_at is not None:
            played_until = self.first_audio_at + self.audio_ms / 1000.0
            if now >= played_until:
                # The client has played everything: the silence already happened in real time,
                # so the next segment starts without a pause (as at the stream's start), and
                # the listener waits for it as for a first segment. A break is the one pause
                # the text asked for: the silence heard counts towards it, the rest is kept.
                self.joiner.flush()
                self._previous_boundary = None
                self._quiet_since = played_until
                self.buffer.restart_turn()
        return self._steps(steps, now)

    def end_markup(self, now: float) -> list[SegmentRequest]:
        """The end of the context's markup: ``SsmlError`` if an element is left open (a lenient
        dialect speaks a ``<`` or ``&`` still held as text)."""
        if self._markup is None:
            return []
        return self._steps(self._markup.end(), now)

    def set_delivery(
        self,
        now: float,
        speed: float | None = None,
        volume: float | None = None,
        sentence_pause_ms: float | None = None,
    ) -> list[SegmentRequest]:
        """Change the context's speed, volume or pause after a sentence for the text that
        follows (what has arrived is cut off first, and keeps its own)."""
        delivery = Delivery(
            self._delivery.speed if speed is None else speed,
            self._delivery.gain if volume is None else volume,
            self._delivery.sentence_pause_ms if sentence_pause_ms is None else sentence_pause_ms,
        )
        if delivery == self._delivery:
            return []
        requests = self._cut(None, now)
        self._delivery = delivery
        if sentence_pause_ms is not None:
            self.buffer.reconfigure(every_sentence(self.buffer.config))
        return requests

    def _steps(self, steps: list[MarkupStep], now: float) -> list[SegmentRequest]:
        requests: list[SegmentRequest] = []
        for step in steps:
            if isinstance(step, Written):
                if self.first_text_at is None and step.text.strip():
                    self.first_text_at = now
                self.text += step.text
                requests += self._requests(self.buffer.feed(step.buffered, now), now)
            elif isinstance(step, Cut):
                requests += self._cut(step.boundary, now)
            elif isinstance(step, Pause):
                self._pause_ms = (self._pause_ms or 0.0) + step.ms
            elif isinstance(step, Restyle):
                self._style = step.style
        return requests

    def _cut(self, boundary: SegmentEnd | None, now: float) -> list[SegmentRequest]:
        requests = self._requests(self.buffer.cut(boundary), now)
        self._lead = None  # no takeover renders across a cut: the lead is spoken as it is
        return requests

    def flush(self, now: float) -> list[SegmentRequest]:
        return self._requests(self.buffer.flush(), now)

    def poll(self, now: float) -> list[SegmentRequest]:
        """What the clock makes due: a sentence whose look-ahead expired, an idle flush, and a
        lead cut when the listener is about to run out (``hurry_at``)."""
        segments = self.buffer.poll(now)
        hurry = self.hurry_at()
        if hurry is not None and now >= hurry:
            segments += self.buffer.hurry()
        return self._requests(segments, now)

    def next_deadline(self) -> float | None:
        """When ``poll`` has something to do (None: nothing without more text or audio)."""
        deadlines = [d for d in (self.buffer.idle_deadline(), self.hurry_at()) if d is not None]
        return min(deadlines, default=None)

    def hurry_at(self) -> float | None:
        """When to cut a lead from the buffered text, so that its first audio comes before the
        listener runs out: ``hurry_margin_s`` before the audio sent and the audio the submitted
        pieces still hold would all have played. None while that is unknown (no audio sent
        yet, a piece not prepared yet), while a lead waits for the rest of its sentence, or
        when nothing waits in the buffer."""
        margin = self.options.hurry_margin_s
        if margin is None or self.state is not ContextState.OPEN or self._lead is not None:
            return None
        if not self.buffer.can_hurry:
            return None
        runs_out = self.listener.runs_out_at()
        if runs_out is None:
            return None
        left = 0.0
        for piece in self._pieces.values():
            if piece.utterance is None:
                return None
            if not piece.taken_over:  # a lead's takeover counts for both
                left += piece.audio_left_s()
        return runs_out + left - margin

    def _requests(self, segments: list[Segment], now: float) -> list[SegmentRequest]:
        if segments and self._first_text_end is None:
            self._first_text_end = len(self.text)
        requests: list[SegmentRequest] = []
        for segment in segments:
            lead, self._lead = self._lead, None
            if lead is not None:
                takeover = self._takeover(lead, segment)
                if takeover is not None:
                    requests.append(takeover)
                    continue
            normalized = self._normalized(segment.start, segment.end)
            first = self._piece_chars(FIRST_PIECE_CHARS) if segment.turn_first else None
            ranges = split_spoken(
                normalized.text, self._piece_chars(self.options.max_piece_chars), first
            )
            # A lead must be one piece: its takeover re-renders it whole.
            leads = segment.lead and len(ranges) == 1 and self.options.takeovers
            # A lead said as it is reads on into the next word (``voxflow.engines.lookahead``).
            said_as_is = segment.lead and not self.options.takeovers
            lookahead = self._lookahead(segment.end) if said_as_is else ""
            delivery = self._delivery.styled(self._style)
            for number, (start, end) in enumerate(ranges):
                last = number == len(ranges) - 1
                boundary = segment.boundary if last else SegmentEnd.WORD
                text = PieceText(segment.start, normalized, start, end, boundary)
                piece = _Piece(text, leads, delivery, self._take_pause(now))
                requests.append(self._request(piece, lookahead=lookahead if last else ""))
                if leads:
                    self._lead = (requests[-1].tag, piece)
        return requests

    def _take_pause(self, now: float) -> float | None:
        """The markup's pause owed before a piece made at ``now``, less the silence the
        listener has heard since its audio ran out."""
        pause, self._pause_ms = self._pause_ms, None
        quiet_since, self._quiet_since = self._quiet_since, None
        heard_ms = 0.0 if quiet_since is None else 1000.0 * (now - quiet_since)
        if pause is None or pause <= heard_ms:
            return None
        return pause - heard_ms

    def _piece_chars(self, english_chars: int) -> int:
        """A piece length given in English characters, in the context's language's."""
        return written_chars(english_chars, self.options.language)

    def _normalized(self, start: int, end: int) -> Normalized:
        """The spoken form of the written text ``[start, end)``, markup's overrides applied."""
        overrides = self._markup.overrides(start, end) if self._markup is not None else ()
        return self.options.normalizer.normalize(
            self.text[start:end], self.options.normalization, overrides
        )

    def _lookahead(self, end: int) -> str:
        """What a lead that ends at ``end`` and is said as it is reads on into: the spoken form
        of the next written word (a Japanese phrase), so that the lead is planned as the start
        of its sentence. Nothing when the text that has arrived does not hold that word whole,
        or when it would cost the lead's text stage more than the lead window's top (that
        stage is what the listener waits for)."""
        window = self.buffer.config.leads
        language = self.options.language
        stop = next_word_end(self.text, end, language, self._piece_chars(FIRST_PIECE_CHARS))
        if window is None or stop is None:
            return ""
        written = self.text[end:stop]
        if spoken_cost(written, language) > window[1]:
            return ""
        spoken = self._normalized(end, stop).text.strip()
        return " " + spoken if written[:1].isspace() and spoken else spoken

    def _takeover(self, lead: tuple[int, _Piece], segment: Segment) -> SegmentRequest | None:
        """The request that renders ``lead``'s sentence whole, up to the end of ``segment``."""
        tag, piece = lead
        start = piece.text.source_start
        whole = self._normalized(start, segment.end)
        spoken = len(whole.text.rstrip())
        if spoken > self._piece_chars(self.options.max_piece_chars):
            return None  # too long to render whole: the rest is rendered on its own
        points = switch_points(piece.text.normalized, whole, self.options.language)
        piece.taken_over = True
        whole_piece = _Piece(
            PieceText(start, whole, 0, spoken, segment.boundary),
            lead=False,
            delivery=piece.delivery,
            takes_over=piece,
        )
        return self._request(whole_piece, Takeover(tag, points))

    def _request(
        self, piece: _Piece, takeover: Takeover | None = None, lookahead: str = ""
    ) -> SegmentRequest:
        tag = self._next_tag
        self._next_tag += 1
        self._pieces[tag] = piece
        settings = self.options.settings
        if settings.seed is not None:
            # One seed per piece keeps a seeded context reproducible however it is windowed.
            settings = replace(settings, seed=settings.seed + tag)
        if piece.delivery.speed != settings.speed:
            settings = replace(settings, speed=piece.delivery.speed)
        return SegmentRequest(
            piece.text.text,
            self.options.voice,
            settings,
            tag,
            lead=piece.lead,
            takeover=takeover,
            lookahead=lookahead,
        )

    def owes_audio(self, now: float) -> None:
        """Pieces were submitted at ``now``: from then on it owes audio, until all of it is
        out."""
        if self._owed_since is None:
            self._owed_since = now

    def busy_until(self) -> float:
        """Until when this context speaks (``Admission``): for ever while it has text to say or
        audio to render, then until its listener has heard all of it; a context that has said
        nothing counts for ``OPEN_GRACE_S`` after it opened."""
        if self._pieces or self._queued or self.buffer.has_content:
            return math.inf
        runs_out = self.listener.runs_out_at()
        return self.created_at + OPEN_GRACE_S if runs_out is None else runs_out

    @property
    def idle(self) -> bool:
        """Every submitted piece has been rendered."""
        return self._finished == self._next_tag

    # -- results in ------------------------------------------------------------------------------

    def prepared(self, event: Prepared) -> None:
        self._synth_s += event.compute_s
        if self._first_cached is None:
            self._first_cached = event.cached
        piece = self._pieces.get(event.tag)
        if piece is not None:
            piece.utterance = event.utterance

    def rendered(self, event: Rendered) -> list[EncodeJob]:
        """The encoder steps for one rendered window; each result (``encoded``) sends the word
        timings of its piece that are due (once the joiner has placed the piece's speech on the
        timeline), then its audio."""
        self._synth_s += event.compute_s
        if event.late_s > 0:
            self._misses += 1
        piece = self._pieces.get(event.tag)
        if piece is None:
            return []
        audio = event.audio
        if piece.delivery.gain != 1.0:
            audio = np.clip(audio * piece.delivery.gain, -1.0, 1.0).astype(np.float32, copy=False)
        spf = piece.utterance.samples_per_frame if piece.utterance is not None else 1
        if event.first:
            audio = self._start_piece(piece, event, audio, spf)
        if event.last and event.continues:
            # The takeover carries on from here: hold the last frames for the cross-fade.
            held = event.splice_frames or 1
            cut = max(0, len(audio) - held * spf)
            self._held, audio = audio[cut:], audio[:cut]
            self._held_end = event.end_frame * spf + piece.sample_offset
        audio = self.joiner.window(audio, event.last and not event.continues)
        words = self._due_words(piece, event)
        jobs = [self._queue(EncodeStep.AUDIO, audio, words, piece, event.end_frame)]
        if event.last:
            self._finished += 1
            self._pieces.pop(event.tag, None)
            if not event.continues:
                self._previous_boundary = piece.text.boundary
            if self.idle:
                # Nothing more is queued: release what the resampler and codec hold back now
                # rather than when (if ever) more text arrives; the stream stays open.
                jobs.append(self._queue(EncodeStep.DRAIN))
        return jobs

    def skipped(self, tag: int) -> None:
        """A lead its takeover replaced before any of it was rendered: none of it is heard, and
        the takeover starts the sentence as a segment of its own (joined to what came before
        the lead as the lead would have been)."""
        if self._pieces.pop(tag, None) is not None:
            self._finished += 1

    def _start_piece(
        self, piece: _Piece, event: Rendered, audio: FloatArray, spf: int
    ) -> FloatArray:
        """Open the piece on the joiner: spliced onto its lead, or as a segment of its own."""
        piece.first_frame = event.start_frame + event.splice_frames
        held, self._held = self._held, None
        if event.splice_frames and held is not None:
            piece.sample_offset = self._held_end - piece.first_frame * spf
            self.joiner.keep_until(self._last_word_end(piece, spf))
            size = event.splice_frames * spf
            return np.concatenate([crossfade(held, audio[:size]), audio[size:]]).astype(
                np.float32, copy=False
            )
        piece.sample_offset = -event.start_frame * spf
        kind = join_kind(self._previous_boundary)
        pause = piece.pause_ms
        if pause is None and kind in (JoinKind.SENTENCE, JoinKind.FLUSH):
            pause = piece.delivery.sentence_pause_ms
        self.joiner.start_segment(kind, keep_until=self._last_word_end(piece, spf), pause_ms=pause)
        return audio

    @staticmethod
    def _last_word_end(piece: _Piece, spf: int) -> int:
        utterance = piece.utterance
        if utterance is None or not utterance.words:
            return 0
        return utterance.words[-1].end_frame * spf + piece.sample_offset

    def _due_words(self, piece: _Piece, event: Rendered) -> list[WordTiming]:
        """Word timings to send before this window's audio.

        A piece sends all its words with its first audio; a lead sends them window by window,
        each word once its first frame is rendered (with the rest of its written token), since
        the words after the switch are spoken by the takeover instead.
        """
        utterance = piece.utterance
        segment_map = self.joiner.segment_map
        if utterance is None or piece.timed >= len(utterance.words):
            return []
        if segment_map is None:
            if event.last:
                piece.timed = len(utterance.words)  # silent: nothing to time the words against
            return []
        words = utterance.words
        end = len(words)
        if piece.lead and not (event.last and not event.continues):
            end = piece.timed
            while end < len(words) and words[end].start_frame < event.end_frame:
                end += 1
            end = _extend_to_token(words, end, piece.text)
        chosen = [w for w in words[piece.timed : end] if w.start_frame >= piece.first_frame]
        piece.timed = len(words) if event.last else end
        # Timed without the codec's inserted samples: ``encoded`` adds them once it knows them.
        return word_timings(
            utterance, chosen, piece.text, segment_map.to_output, piece.sample_offset
        )

    def finish(self) -> EncodeJob:
        """All audio is rendered: the encoder's last step (the codec's last frames and trailer);
        its result ends the context."""
        self.state = ContextState.FINISHING
        return self._queue(EncodeStep.FINISH)

    def segment_failed(self, tag: int) -> None:
        piece = self._pieces.pop(tag, None)
        if piece is not None:
            self._finished += 1
            self._previous_boundary = piece.text.boundary

    def _queue(
        self,
        step: EncodeStep,
        audio: FloatArray | None = None,
        words: Sequence[WordTiming] = (),
        piece: _Piece | None = None,
        end_frame: int = 0,
    ) -> EncodeJob:
        job = EncodeJob(self._encoder, step, audio)
        self._queued.append(_Queued(job, tuple(words), piece, end_frame))
        return job

    # -- encoder results in ----------------------------------------------------------------------

    def encoded(self, result: Encoded, now: float) -> tuple[list[AudioOut | TimestampsOut], bool]:
        """The client events of the oldest queued step's result, and whether it ended the
        context. Timing comes from the samples a decoder will play, not from byte counts
        (compressed formats, headers and codec frames)."""
        queued = self._queued.popleft()
        if queued.piece is not None:
            queued.piece.sent_to = queued.end_frame
        out: list[AudioOut | TimestampsOut] = []
        if queued.words:
            # Codec priming inserted before this audio delays its words too.
            shift_ms = 1000.0 * result.inserted_samples / self._out_rate
            words = tuple(_shifted(w, shift_ms) for w in queued.words)
            self.words.extend(words)
            out.append(TimestampsOut(self.id, words))
        if result.data:
            offset_ms = 1000.0 * self._out_samples / self._out_rate
            duration_ms = 1000.0 * result.samples / self._out_rate
            self._out_samples += result.samples
            self.listener.sent(now, result.samples / self._out_rate)
            text_end = None
            if self.first_audio_at is None and result.samples > 0:
                self.first_audio_at = now
                text_end = self._first_text_end
            out.append(
                AudioOut(
                    self.id,
                    self._seq,
                    offset_ms,
                    duration_ms,
                    result.data,
                    text_end,
                    self._quiet_before(now),
                )
            )
            self._seq += 1
        if self.idle and not self._queued:
            self._owed_since = None  # all it owed is out
        return out, queued.job.step is EncodeStep.FINISH

    def _quiet_before(self, now: float) -> float:
        """How long it sent no audio before ``now`` while it owed some (see ``AudioOut``)."""
        since = [t for t in (self._owed_since, self._last_audio_at) if t is not None]
        self._last_audio_at = now
        return max(0.0, now - max(since)) if since else 0.0

    # -- read-outs -------------------------------------------------------------------------------

    @property
    def audio_ms(self) -> float:
        return 1000.0 * self._out_samples / self._out_rate

    def metrics(self) -> ContextMetrics:
        ttfa = None
        if self.first_audio_at is not None and self.first_text_at is not None:
            ttfa = 1000.0 * (self.first_audio_at - self.first_text_at)
        synth_ms = 1000.0 * self._synth_s
        audio_ms = self.audio_ms
        return ContextMetrics(
            ttfa_ms=ttfa,
            audio_ms=audio_ms,
            synth_ms=synth_ms,
            rtf=synth_ms / audio_ms if audio_ms > 0 else None,
            chunks=self._seq,
            deadline_misses=self._misses,
            first_cached=self._first_cached,
        )

    def spoken_text(self, played_ms: float) -> str:
        """The client's text up to the end of the last word fully played by ``played_ms``."""
        heard = [w for w in self.words if w.end_ms <= played_ms + 1e-6]
        if not heard:
            return ""
        start = len(self.text) - len(self.text.lstrip())
        return self.text[start : heard[-1].char_end]


def _shifted(word: WordTiming, shift_ms: float) -> WordTiming:
    if shift_ms == 0:
        return word
    return replace(word, start_ms=word.start_ms + shift_ms, end_ms=word.end_ms + shift_ms)


def _extend_to_token(words: Sequence[WordSpan], end: int, text: PieceText) -> int:
    """Move ``end`` past the spoken words that come from the same written token as the word
    before it ("$3.50" is five spoken words), so a token is never timed in two halves."""
    if end == 0 or end >= len(words):
        return end
    last = text.normalized.to_source(
        text.spoken_start + words[end - 1].char_start, text.spoken_start + words[end - 1].char_end
    )
    while end < len(words):
        source = text.normalized.to_source(
            text.spoken_start + words[end].char_start, text.spoken_start + words[end].char_end
        )
        if source[0] >= last[1]:
            break
        end += 1
    return end
