"""``voxflow bench-prosody``: what cutting a sentence into separately rendered pieces does to it.

For every reply, the *streamed* rendering (what the server's path sends a client) is compared
with the *whole-sentence* rendering (each sentence one utterance; ``prosody.render``) at every
*cut*: the boundary between the last word of one separately rendered piece and the first word of
the next (a piece's words normally come in one ``timestamps`` event; a lead's come window by
window, and the switch to its takeover is a cut too: the speaker tags each event with its piece).
Cuts are matched to the reference by the written text's character offsets (the word before and
the word after), so both renderings are read at the same word boundary whatever their timing.

Per cut (``CutMeasure``):

* *added pause*: the longest silent run (``LevelSettings``) from the middle of the word before
  to the middle of the word after, streamed minus reference. The middles are those of each
  word's *speech* (its non-silent frames), not of its timing: a word's timing runs to the next
  word's start, so it includes the pause after it;
* *F0 distance*: YIN F0 of the word before and the word after, each resampled to
  ``points_per_word`` points over its speech, RMS difference in semitones over the points voiced
  in both (points an octave apart are tracker errors: counted, left out; ``pitch.F0Comparison``);
  and *end F0*: the median difference of the last three such points of the word before,
  streamed relative to reference (negative: the streamed rendering falls where the sentence goes
  on). Points at the same relative position, not each rendering's own last voiced frame: a
  creaky end that one rendering voices for two frames more would otherwise read as a fall;
* *energy distance*: the same contour comparison with frame energy in dB.

Per reply: the *duration ratio*, streamed speech span over reference speech span. The *noise
floor* applies the same measures to two renderings of the reference that differ only in their
noise seed, at the same word boundaries: the difference the voice makes on its own.
"""

from __future__ import annotations

import bisect
import itertools
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TextIO

import numpy as np

from voxflow import (
    ChunkingConfig,
    Engine,
    LocalSpeaker,
    SchedulerSettings,
    Strategy,
    VoiceSettings,
    WordTiming,
    segment_text,
)
from voxflow_bench.corpus import Reply
from voxflow_bench.levels import LevelSettings, longest_silence_s, speech_extent, speech_span_s
from voxflow_bench.pitch import (
    FloatArray,
    PitchTrack,
    compare_f0,
    energy_distance,
    sample_contour,
    track_pitch,
)
from voxflow_bench.progress import ProgressLine
from voxflow_bench.prosody.render import (
    Rendering,
    reference_speaker,
    render,
    split_pieces,
    streamed_speaker,
)
from voxflow_bench.prosody.results import (
    Cut,
    CutKind,
    CutMeasure,
    CutResult,
    Mode,
    NoiseMode,
    ProsodyOptions,
    ProsodyReport,
    ReplyResult,
)

__all__ = ["Analysed", "compare_boundary", "find_cuts", "measure_reply", "run_prosody_bench"]

_CLAUSE_MARKS = frozenset(",;:—–")


@dataclass(frozen=True, eq=False)
class Analysed:
    """A rendering with what every comparison reads: its pitch/energy track and speech span."""

    rendering: Rendering
    track: PitchTrack
    span_s: float

    @classmethod
    def of(cls, rendering: Rendering, options: ProsodyOptions) -> Analysed:
        audio, rate = rendering.audio, rendering.sample_rate
        return cls(
            rendering,
            track_pitch(audio, rate, options.pitch),
            speech_span_s(audio, rate, options.levels),
        )


# -- cuts --------------------------------------------------------------------------------------


def find_cuts(rendering: Rendering, text: str) -> list[Cut]:
    """The cuts of a streamed rendering of ``text``, classified from the written text.

    A cut is a sentence end when the words on either side lie in different sentences of the
    reference (the ``sentence`` strategy's split, which knows "Dr." and "3.50" are not ends);
    inside a sentence it is a clause cut when a clause mark lies between the words.
    """
    sentences = segment_text(text, ChunkingConfig(strategy=Strategy.SENTENCE))
    starts = [segment.start for segment in sentences]
    pieces = [piece for piece in rendering.pieces if piece]
    cuts: list[Cut] = []
    for previous, following in itertools.pairwise(pieces):
        before, after = previous[-1], following[0]
        gap = text[before.char_end : after.char_start]
        if bisect.bisect_right(starts, before.char_start) != bisect.bisect_right(
            starts, after.char_start
        ):
            kind = CutKind.SENTENCE
        elif _CLAUSE_MARKS.intersection(gap) or " - " in gap:
            kind = CutKind.CLAUSE
        else:
            kind = CutKind.PHRASE
        cuts.append(Cut(kind, before, after))
    return cuts


def _word_at(words: Sequence[WordTiming], target: WordTiming, last: bool) -> WordTiming | None:
    """The word of ``words`` that covers ``target``'s characters (the last or first of several)."""
    overlapping = [
        w for w in words if w.char_start < target.char_end and target.char_start < w.char_end
    ]
    if not overlapping:
        return None
    return overlapping[-1] if last else overlapping[0]


# -- measures ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Boundary:
    """One rendering around one word boundary: each word's speech (samples) and the pause."""

    before: tuple[int, int]
    after: tuple[int, int]
    pause_s: float


def _boundary(
    analysed: Analysed, before: WordTiming, after: WordTiming, levels: LevelSettings
) -> _Boundary:
    rendering = analysed.rendering
    audio, rate = rendering.audio, rendering.sample_rate

    def sample(ms: float) -> int:
        return round(ms * rate / 1000.0)

    # A streamed segment's last word may be timed into the trimmed silence and past the next
    # word's start; the next word's start is where its audio really begins.
    b0, b1 = sample(before.start_ms), sample(min(before.end_ms, after.start_ms))
    a0, a1 = sample(after.start_ms), sample(after.end_ms)
    before_speech = speech_extent(audio, rate, b0, b1, levels) or (b0, max(b1, b0 + 1))
    after_speech = speech_extent(audio, rate, a0, a1, levels) or (a0, max(a1, a0 + 1))
    middle_before = (before_speech[0] + before_speech[1]) // 2
    middle_after = (after_speech[0] + after_speech[1]) // 2
    pause = longest_silence_s(audio, rate, middle_before, middle_after, levels)
    return _Boundary(before_speech, after_speech, pause)


def _seconds(span: tuple[int, int], rate: int) -> tuple[float, float]:
    return span[0] / rate, span[1] / rate


def compare_boundary(
    test: Analysed,
    reference: Analysed,
    before: WordTiming,
    after: WordTiming,
    options: ProsodyOptions,
) -> CutMeasure | None:
    """``test`` against ``reference`` at the boundary between the words that cover ``before``'s
    and ``after``'s characters; None when either rendering lacks such a pair of words."""
    pairs = []
    for analysed in (test, reference):
        words = analysed.rendering.words
        word_before = _word_at(words, before, last=True)
        word_after = _word_at(words, after, last=False)
        if word_before is None or word_after is None or word_before is word_after:
            return None
        pairs.append(_boundary(analysed, word_before, word_after, options.levels))
    at_test, at_reference = pairs
    points = options.points_per_word
    f0: list[FloatArray] = []
    energy: list[FloatArray] = []
    for analysed, boundary in ((test, at_test), (reference, at_reference)):
        rate = analysed.rendering.sample_rate
        # Each word on its own time axis: the word before, then the word after.
        head = sample_contour(analysed.track, *_seconds(boundary.before, rate), points)
        tail = sample_contour(analysed.track, *_seconds(boundary.after, rate), points)
        f0.append(np.concatenate([head[0], tail[0]]))
        energy.append(np.concatenate([head[1], tail[1]]))
    contour = compare_f0(f0[0], f0[1])
    # The end of the word before's voicing: its last compared points (a final voiceless
    # consonant, as in "lights", ends the pitch on the vowel).
    end = compare_f0(f0[0][:points], f0[1][:points])
    return CutMeasure(
        pause_ms=1000.0 * at_test.pause_s,
        reference_pause_ms=1000.0 * at_reference.pause_s,
        f0_distance_st=contour.rms_st,
        end_f0_delta_st=end.end_delta_st,
        energy_distance_db=energy_distance(energy[0], energy[1], options.levels.silence_db),
        f0_points=contour.compared,
        f0_octave_errors=contour.octave_errors,
    )


def measure_reply(
    reply: Reply,
    mode: Mode,
    streamed: Analysed,
    reference: Analysed,
    floor: tuple[Analysed, Analysed],
    options: ProsodyOptions,
) -> ReplyResult:
    """Every cut of ``streamed`` against ``reference`` (and the floor at the same boundaries)."""
    results = []
    for cut in find_cuts(streamed.rendering, reply.text):
        results.append(
            CutResult(
                cut,
                compare_boundary(streamed, reference, cut.before, cut.after, options),
                compare_boundary(floor[1], floor[0], cut.before, cut.after, options),
            )
        )
    floor_ratio = floor[1].span_s / floor[0].span_s if floor[0].span_s > 0 else None
    return ReplyResult(
        name=reply.name,
        category=reply.category,
        chars=len(reply.text),
        mode=mode,
        streamed_span_s=streamed.span_s,
        reference_span_s=reference.span_s,
        floor_duration_ratio=floor_ratio,
        cuts=tuple(results),
        pieces=len([piece for piece in streamed.rendering.pieces if piece]),
        events=streamed.rendering.events,
    )


# -- the run -----------------------------------------------------------------------------------


def _stream_all(
    speaker: LocalSpeaker,
    replies: Sequence[Reply],
    options: ProsodyOptions,
    progress: ProgressLine,
) -> list[dict[Mode, Rendering]]:
    settings = options.voice_settings()
    out: list[dict[Mode, Rendering]] = []
    for reply in replies:
        renderings: dict[Mode, Rendering] = {}
        for mode in options.modes:
            pieces = split_pieces(reply.text) if mode is Mode.TOKENS else None
            renderings[mode] = render(speaker, reply.text, settings, pieces, options.token_rate)
            progress.advance(f"streamed {reply.name} ({mode.value})")
        out.append(renderings)
    return out


def run_prosody_bench(
    engine: Engine,
    voice: str,
    replies: Sequence[Reply],
    options: ProsodyOptions | None = None,
    progress_out: TextIO | None = None,
    scheduler: SchedulerSettings | None = None,
) -> ProsodyReport:
    """Stream every reply through the server's path with ``voice`` (``options.voice`` overrides
    it) on ``engine``, with ``scheduler``'s workers, render its reference, compare them."""
    o = options or ProsodyOptions()
    if not replies:
        raise ValueError("no replies to measure")
    started = time.perf_counter()
    voice = o.voice or voice
    progress = ProgressLine(progress_out, len(replies) * (len(o.modes) + 1))
    with streamed_speaker(engine, voice, scheduler) as speaker:
        streamed = _stream_all(speaker, replies, o, progress)
    settings = o.voice_settings()
    floor_a, floor_b = o.floor_settings()
    results: list[ReplyResult] = []
    with reference_speaker(engine, voice) as whole:
        for reply, renderings in zip(replies, streamed, strict=True):

            def reference_with(voice_settings: VoiceSettings, text: str = reply.text) -> Analysed:
                return Analysed.of(render(whole, text, voice_settings), o)

            reference = reference_with(settings)
            # Seeded: the reference is itself one side of the floor; off: both sides are extra.
            first = reference if o.noise is NoiseMode.SEEDED else reference_with(floor_a)
            floor = (first, reference_with(floor_b))
            for mode, rendering in renderings.items():
                analysed = Analysed.of(rendering, o)
                results.append(measure_reply(reply, mode, analysed, reference, floor, o))
            progress.advance(f"measured {reply.name}")
    progress.finish()
    return ProsodyReport(o, voice, tuple(results), time.perf_counter() - started)
