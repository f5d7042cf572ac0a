"""SeamJoiner: silence trimming, pauses and fades at segment joins, on synthetic and real audio."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pytest

from voxflow.audio.seam_settings import JoinKind, SeamSettings
from voxflow.audio.seams import SeamJoiner, SegmentMap
from voxflow.engines.base import Utterance, VoiceSettings
from voxflow.engines.piper import PiperEngine
from voxflow.session.context import join_kind
from voxflow.text.buffer import segment_text
from voxflow.text.chunking import ChunkingConfig, Segment, SegmentEnd, Strategy

Audio = npt.NDArray[np.float32]

RATE = 22050


def samples(ms: float) -> int:
    return round(ms * RATE / 1000)


FRAME = samples(5.0)
FADE = samples(5.0)
LEAD = samples(10.0)
TAIL = samples(20.0)
HOLD = samples(100.0)
WORD_GAP = TAIL + LEAD  # a word cut has no pause: only the kept margins remain


def silence(length: int, seed: int = 0) -> Audio:
    """Noise near -100 dBFS: silent to the joiner, yet not exactly zero, like a voice's silence."""
    rng = np.random.default_rng(seed)
    return (1e-5 * rng.standard_normal(length)).astype(np.float32)


def tone(length: int, amplitude: float = 0.3, freq: float = 220.0) -> Audio:
    """Starts at its peak (a cosine), so a cut at its edges is as abrupt as it gets."""
    t = np.arange(length) / RATE
    return (amplitude * np.cos(2 * np.pi * freq * t)).astype(np.float32)


def cat(*parts: Audio) -> Audio:
    return np.concatenate(parts).astype(np.float32)


def splits(length: int, seed: int | None, max_size: int = 3000) -> list[int]:
    """Window sizes covering ``length``: one window for ``seed=None``, else random sizes."""
    if seed is None:
        return [length]
    rng = np.random.default_rng(seed)
    sizes: list[int] = []
    while sum(sizes) < length:
        sizes.append(int(rng.integers(1, max_size)))
    sizes[-1] -= sum(sizes) - length
    return [s for s in sizes if s > 0]


def windows(audio: Audio, sizes: Sequence[int]) -> Iterator[tuple[Audio, bool]]:
    start = 0
    for index, size in enumerate(sizes):
        yield audio[start : start + size], index == len(sizes) - 1
        start += size


@dataclass(frozen=True)
class Joined:
    audio: Audio
    maps: tuple[SegmentMap | None, ...]
    max_latency: int  # largest hold-back seen after a window that was not a segment's last


def join(
    segments: Sequence[tuple[JoinKind | None, Audio]],
    seed: int | None = None,
    settings: SeamSettings | None = None,
) -> Joined:
    """Join ``(boundary before, audio)`` segments, each fed in windows (random if ``seed``)."""
    joiner = SeamJoiner(RATE, settings or SeamSettings())
    out: list[Audio] = []
    maps: list[SegmentMap | None] = []
    max_latency = 0
    for index, (boundary, audio) in enumerate(segments):
        joiner.start_segment(boundary)
        sizes = splits(len(audio), None if seed is None else seed + index)
        for window, last in windows(audio, sizes):
            out.append(joiner.window(window, last))
            if not last:
                max_latency = max(max_latency, joiner.latency_samples)
        assert joiner.latency_samples == 0
        maps.append(joiner.segment_map)
    out.append(joiner.flush())
    audio_out = np.concatenate(out) if out else np.zeros(0, np.float32)
    assert len(audio_out) == joiner.output_samples
    return Joined(audio_out.astype(np.float32), tuple(maps), max_latency)


def raised_cosine(length: int) -> npt.NDArray[np.float64]:
    return 0.5 - 0.5 * np.cos(np.pi * (np.arange(length) + 0.5) / length)


# -- synthetic signals -----------------------------------------------------------------------------


def test_leading_and_trailing_silence_is_trimmed_to_the_margins() -> None:
    speech = tone(60 * FRAME)
    joined = join([(None, cat(silence(40 * FRAME), speech, silence(80 * FRAME, 1)))])
    assert len(joined.audio) == LEAD + len(speech) + TAIL
    np.testing.assert_array_equal(joined.audio[LEAD : LEAD + len(speech)], speech)
    assert np.abs(joined.audio[:LEAD]).max() < 1e-4
    assert np.abs(joined.audio[LEAD + len(speech) :]).max() < 1e-4
    assert joined.maps[0] == SegmentMap(40 * FRAME - LEAD, 0, 100 * FRAME + TAIL)


def test_speech_and_pauses_inside_a_segment_pass_unchanged() -> None:
    inner = cat(tone(30 * FRAME), silence(60 * FRAME, 2), tone(31 * FRAME, 0.1, 330.0))
    segment = cat(silence(20 * FRAME), inner, silence(50 * FRAME, 3))
    joined = join([(None, segment)], seed=5)
    # The 300 ms pause inside the segment is longer than the hold limit and is kept all the same.
    np.testing.assert_array_equal(joined.audio[LEAD : LEAD + len(inner)], inner)


@pytest.mark.parametrize(
    ("boundary", "gap"),
    [
        (JoinKind.SENTENCE, samples(250.0)),
        (JoinKind.CLAUSE, samples(150.0)),
        (JoinKind.FLUSH, samples(250.0)),
        (JoinKind.WORD, WORD_GAP),
        (None, WORD_GAP),
    ],
)
def test_the_gap_between_two_segments_is_the_boundarys_pause(
    boundary: JoinKind | None, gap: int
) -> None:
    first, second = tone(40 * FRAME), tone(40 * FRAME, 0.2, 300.0)
    joined = join(
        [
            (None, cat(silence(10 * FRAME), first, silence(20 * FRAME, 1))),
            (boundary, cat(silence(11 * FRAME, 2), second, silence(30 * FRAME, 3))),
        ],
        seed=1,
    )
    first_end = LEAD + len(first)
    np.testing.assert_array_equal(joined.audio[LEAD:first_end], first)
    np.testing.assert_array_equal(
        joined.audio[first_end + gap : first_end + gap + len(second)], second
    )
    assert np.abs(joined.audio[first_end : first_end + gap]).max() < 1e-4


def test_custom_pauses_are_used() -> None:
    settings = SeamSettings(sentence_pause_ms=400.0, word_pause_ms=60.0)
    for boundary, gap in ((JoinKind.SENTENCE, samples(400.0)), (JoinKind.WORD, samples(60.0))):
        speech = tone(20 * FRAME)
        joined = join([(None, speech), (boundary, speech)], settings=settings)
        # No silence at the segments' edges: the whole gap is inserted.
        np.testing.assert_array_equal(
            joined.audio[len(speech) + gap :], joined.audio[: len(speech)]
        )
        assert len(joined.audio) == 2 * len(speech) + gap


def test_a_pause_given_replaces_the_boundarys_and_may_come_first() -> None:
    speech = tone(20 * FRAME)
    joiner = SeamJoiner(RATE)
    out: list[Audio] = []
    for boundary, pause_ms in ((None, 300.0), (JoinKind.SENTENCE, 40.0), (JoinKind.WORD, 0.0)):
        joiner.start_segment(boundary, pause_ms=pause_ms)
        out.append(joiner.window(speech, last=True))
    audio = cat(*out, joiner.flush())
    # 300 ms of silence before the first speech, 40 ms instead of a sentence's 250, then none.
    first, second = samples(300.0), samples(40.0)
    assert len(audio) == first + 3 * len(speech) + second
    assert np.abs(audio[:first]).max() == 0.0
    spoken = audio[first : first + len(speech)]  # faded in and out at its edges
    assert np.abs(spoken).max() > 0.29
    at = first + len(speech) + second
    assert np.abs(audio[first + len(speech) : at]).max() == 0.0
    np.testing.assert_array_equal(audio[at : at + len(speech)], spoken)
    np.testing.assert_array_equal(audio[at + len(speech) :], spoken)


def test_the_first_window_is_only_shortened_by_the_trimmed_silence() -> None:
    joiner = SeamJoiner(RATE)
    joiner.start_segment(None)
    first = cat(silence(10 * FRAME), tone(10 * FRAME))
    out = joiner.window(first, last=False)
    # Out right away: everything from the lead margin on, but the fade's worth held for the end.
    assert len(out) == len(first) - (10 * FRAME - LEAD) - FADE
    assert joiner.latency_samples == FADE


def test_fades_where_a_segment_starts_and_ends_in_speech() -> None:
    speech = tone(50 * FRAME)
    joined = join([(None, speech)])
    assert len(joined.audio) == len(speech)
    np.testing.assert_array_equal(joined.audio[FADE:-FADE], speech[FADE:-FADE])
    ramp = raised_cosine(FADE)
    np.testing.assert_allclose(joined.audio[:FADE], speech[:FADE] * ramp, atol=1e-7)
    np.testing.assert_allclose(joined.audio[-FADE:], speech[-FADE:] * ramp[::-1], atol=1e-7)
    assert abs(joined.audio[0]) < 1e-3 * abs(speech[0])


def test_a_word_join_between_two_cuts_in_speech_does_not_click() -> None:
    # 441 Hz has a 50-sample period: the first segment stops at the trough, the second starts at
    # the peak, the worst step plain concatenation can make.
    first, second = tone(50 * 100 + 26, freq=441.0), tone(5000, freq=441.0)
    assert first[-1] < -0.29 and second[0] > 0.29
    own_jump = float(np.median(np.abs(np.diff(first))))
    plain = cat(first, second)
    joined = join([(None, first), (JoinKind.WORD, second)]).audio
    assert len(joined) == len(plain)  # no silence at the edges, no pause for a word: no gap
    edge = len(first)
    assert np.abs(np.diff(plain[edge - 3 : edge + 3])).max() > 10 * own_jump
    assert np.abs(np.diff(joined[edge - 3 : edge + 3])).max() < own_jump / 10


def test_hold_back_stays_within_the_limit() -> None:
    segment = cat(
        silence(30 * FRAME),
        tone(40 * FRAME),
        silence(80 * FRAME, 1),  # 400 ms inside the segment
        tone(40 * FRAME),
        silence(100 * FRAME, 2),  # 500 ms at the end
    )
    for seed in range(5):
        joined = join([(None, segment), (JoinKind.SENTENCE, segment)], seed=seed)
        assert 0 < joined.max_latency <= HOLD


def test_a_window_ending_in_speech_holds_back_only_the_fade() -> None:
    joiner = SeamJoiner(RATE)
    joiner.start_segment(None)
    speech = tone(200 * FRAME)
    for size in (1000, 37, 2048, 5):
        joiner.window(speech[:size], last=False)
        speech = speech[size:]
        assert joiner.latency_samples == FADE


@pytest.mark.parametrize("seed", range(6))
def test_output_does_not_depend_on_window_sizes(seed: int) -> None:
    segment = cat(
        silence(60 * FRAME),
        tone(25 * FRAME),
        silence(80 * FRAME, 1),
        tone(37 * FRAME, 0.05, 500.0),
        silence(20 * FRAME, 2),  # 100 ms: a trailing silence any window split can trim
    )
    tight = cat(tone(33 * FRAME), silence(7, 3))
    stream = [(None, segment), (JoinKind.CLAUSE, tight), (JoinKind.WORD, segment)]
    whole = join(stream)
    for max_size in (7, 500, 5000):
        rng_seed = 100 * seed + max_size
        joiner = SeamJoiner(RATE)
        out: list[Audio] = []
        for index, (boundary, audio) in enumerate(stream):
            joiner.start_segment(boundary)
            sizes = splits(len(audio), rng_seed + index, max_size)
            out.extend(joiner.window(w, last) for w, last in windows(audio, sizes))
        np.testing.assert_array_equal(np.concatenate(out), whole.audio)


def test_a_long_trailing_silence_cut_by_a_window_keeps_the_speech_timeline() -> None:
    first = cat(silence(10 * FRAME), tone(40 * FRAME), silence(80 * FRAME, 1))  # 400 ms tail
    second = cat(silence(10 * FRAME, 2), tone(40 * FRAME, 0.1))
    whole = join([(None, first), (JoinKind.SENTENCE, second)])
    joiner = SeamJoiner(RATE)
    joiner.start_segment(None)
    # A window ending 300 ms into the trailing silence: some of it must go out before the end.
    cut = 50 * FRAME + 60 * FRAME
    out = [joiner.window(first[:cut], last=False)]
    assert joiner.latency_samples <= HOLD
    out.append(joiner.window(first[cut:], last=True))
    joiner.start_segment(JoinKind.SENTENCE)
    out.append(joiner.window(second, last=True))
    split = np.concatenate(out)
    # The extra silence is taken from the pause: the second segment's speech lands where it did.
    assert len(split) == len(whole.audio)
    speech = slice(len(split) - 40 * FRAME, len(split))
    np.testing.assert_array_equal(split[speech], whole.audio[speech])
    np.testing.assert_array_equal(split[: LEAD + 40 * FRAME], whole.audio[: LEAD + 40 * FRAME])


def test_segment_maps_place_every_kept_sample() -> None:
    segments = [
        cat(silence(23 * FRAME + 17), tone(40 * FRAME), silence(50 * FRAME, 1)),
        cat(tone(30 * FRAME, 0.2), silence(10 * FRAME, 2)),
        cat(silence(5, 3), tone(31 * FRAME + 3, 0.1), silence(90 * FRAME, 4)),
    ]
    boundaries = [None, JoinKind.SENTENCE, JoinKind.WORD]
    joined = join(list(zip(boundaries, segments, strict=True)), seed=9)
    previous_end = 0
    for segment, segment_map in zip(segments, joined.maps, strict=True):
        assert segment_map is not None and segment_map.source_end is not None
        kept = np.arange(segment_map.source_start + FADE, segment_map.source_end - FADE)
        positions = np.array([segment_map.to_output(int(i)) for i in kept])
        np.testing.assert_array_equal(joined.audio[positions], segment[kept])
        # Positions in the trimmed silence clamp to the segment's edges.
        assert segment_map.to_output(0) == segment_map.output_start >= previous_end
        assert segment_map.to_output(len(segment)) == segment_map.output_end
        previous_end = segment_map.output_end
    assert previous_end == len(joined.audio)


def test_a_silent_segment_adds_nothing_and_passes_its_pause_on() -> None:
    speech = tone(20 * FRAME)
    joined = join(
        [(None, speech), (JoinKind.SENTENCE, silence(40 * FRAME)), (JoinKind.WORD, speech)]
    )
    assert joined.maps[1] is None
    # The sentence pause owed before the silent segment still separates the two others.
    assert len(joined.audio) == 2 * len(speech) + samples(250.0)


def test_flush_releases_a_cut_off_segment_and_restarts_without_a_pause() -> None:
    joiner = SeamJoiner(RATE)
    joiner.start_segment(None)
    speech = tone(40 * FRAME)
    head = joiner.window(speech, last=False)
    tail = joiner.flush()
    assert len(head) + len(tail) == len(speech)
    assert len(tail) == FADE and abs(tail[-1]) < 1e-3 * abs(speech[-1])
    np.testing.assert_array_equal(head[FADE:], speech[FADE : len(head)])
    joiner.start_segment(JoinKind.SENTENCE)
    after = joiner.window(cat(silence(20 * FRAME), speech), last=True)
    # A fresh start: only the lead margin before the speech, no sentence pause.
    np.testing.assert_array_equal(after[LEAD:-FADE], speech[:-FADE])
    assert len(after) == LEAD + len(speech)


def test_a_segment_left_open_is_ended_by_the_next_one() -> None:
    joiner = SeamJoiner(RATE)
    joiner.start_segment(None)
    first, second = tone(40 * FRAME), tone(30 * FRAME, 0.2)
    out = [joiner.window(first, last=False)]
    joiner.start_segment(JoinKind.CLAUSE)  # the first segment failed before its last window
    out.append(joiner.window(second, last=True))
    joined = np.concatenate(out)
    assert len(joined) == len(first) + samples(150.0) + len(second)
    np.testing.assert_array_equal(joined[FADE : len(first) - FADE], first[FADE:-FADE])
    np.testing.assert_array_equal(joined[-len(second) + FADE : -FADE], second[FADE:-FADE])


def test_misuse_and_bad_settings_are_rejected() -> None:
    with pytest.raises(RuntimeError):
        SeamJoiner(RATE).window(tone(100), last=True)
    with pytest.raises(ValueError):
        SeamSettings(fade_ms=15.0)  # longer than the 10 ms lead margin: would fade speech
    with pytest.raises(ValueError):
        SeamSettings(clause_pause_ms=-1.0)
    with pytest.raises(ValueError):
        SeamSettings(max_hold_ms=10.0)
    with pytest.raises(ValueError):
        SeamSettings(frame_ms=0.0)
    with pytest.raises(ValueError):
        SeamJoiner(0)


# -- the real voice ----------------------------------------------------------------------------

STORY = (
    "The sun came up over the quiet hills, and the birds began to sing. We walked slowly to the "
    "river after a late breakfast. My brother carried the basket, the blanket, and the old red "
    "kite. It was windy, so the kite rose quickly above the tall trees. Nobody expected the "
    "rain, but it arrived anyway. We ran back home laughing, soaked to the skin, and dried off "
    "by the fire. Later that night, the storm passed over the valley, and the stars came out "
    "one by one."
)
SPEECH_DB = -45.0  # "voiced regions" for the typical jump: clearly audible 5 ms frames
SILENCE_DB = SeamSettings().silence_db


@dataclass(frozen=True)
class RenderedSegment:
    segment: Segment
    utterance: Utterance
    windows: tuple[Audio, ...]

    @property
    def audio(self) -> Audio:
        return np.concatenate(self.windows).astype(np.float32)


def _windows(num_frames: int) -> list[tuple[int, int]]:
    """16 frames first, then doubling up to 64, as a stream's windows grow."""
    windows, start, size = [], 0, 16
    while start < num_frames:
        windows.append((start, min(num_frames, start + size)))
        start, size = windows[-1][1], min(64, 2 * size)
    return windows


def render_stream(engine: PiperEngine, segments: Sequence[Segment]) -> list[RenderedSegment]:
    """Each segment in windows, as a stream renders them (small first, then growing)."""
    rendered = []
    for index, segment in enumerate(segments):
        utterance = engine.prepare(segment.text, "joe", VoiceSettings(seed=index))
        parts = tuple(engine.render(utterance, s, e) for s, e in _windows(utterance.num_frames))
        rendered.append(RenderedSegment(segment, utterance, parts))
    return rendered


def join_stream(
    rendered: Sequence[RenderedSegment], settings: SeamSettings | None = None, whole: bool = False
) -> Joined:
    joiner = SeamJoiner(RATE, settings or SeamSettings())
    out: list[Audio] = []
    maps: list[SegmentMap | None] = []
    boundary: JoinKind | None = None
    for item in rendered:
        joiner.start_segment(boundary)
        parts = (item.audio,) if whole else item.windows
        out.extend(joiner.window(w, i == len(parts) - 1) for i, w in enumerate(parts))
        maps.append(joiner.segment_map)
        boundary = join_kind(item.segment.boundary)
    return Joined(np.concatenate(out).astype(np.float32), tuple(maps), 0)


def frame_db(audio: Audio) -> npt.NDArray[np.float64]:
    """Mean-square level of each whole 5 ms frame, in dBFS."""
    count = len(audio) // FRAME
    frames = audio[: count * FRAME].astype(np.float64).reshape(count, FRAME)
    levels: npt.NDArray[np.float64] = 10 * np.log10(np.mean(frames * frames, axis=1) + 1e-20)
    return levels


def speech_edges(audio: Audio) -> tuple[int, int]:
    """First and one-past-last sample of the frames above the silence threshold."""
    loud = np.flatnonzero(frame_db(audio) > SILENCE_DB)
    return int(loud[0]) * FRAME, (int(loud[-1]) + 1) * FRAME


def typical_jump(rendered: Sequence[RenderedSegment]) -> tuple[float, float]:
    """Median and 99th percentile of |x[n] - x[n-1]| inside the clearly voiced frames."""
    jumps = []
    for item in rendered:
        audio = item.audio
        voiced = np.repeat(frame_db(audio) > SPEECH_DB, FRAME)
        diffs = np.abs(np.diff(audio[: len(voiced)]))
        jumps.append(diffs[voiced[1:] & voiced[:-1]])
    all_jumps = np.concatenate(jumps)
    return float(np.median(all_jumps)), float(np.percentile(all_jumps, 99))


def largest_join_jump(audio: Audio, maps: Sequence[SegmentMap | None]) -> float:
    """The largest step within 3 samples of each point where one segment's audio meets the
    pause or the next segment's audio."""
    edges = []
    for segment_map in maps:
        assert segment_map is not None and segment_map.output_end is not None
        edges += [segment_map.output_start, segment_map.output_end]
    return max(float(np.abs(np.diff(audio[max(0, e - 3) : e + 3])).max()) for e in edges[1:-1])


@pytest.fixture(scope="module")
def story(engine: PiperEngine) -> list[RenderedSegment]:
    segments = segment_text(STORY, ChunkingConfig(strategy=Strategy.WORD, words_per_chunk=4))
    return render_stream(engine, segments)


def test_twenty_segment_joins_have_set_pauses_and_no_clicks(
    story: list[RenderedSegment],
) -> None:
    kinds = [item.segment.boundary for item in story]
    assert len(story) >= 20
    assert {SegmentEnd.WORD, SegmentEnd.CLAUSE, SegmentEnd.SENTENCE} <= set(kinds)
    joined = join_stream(story)
    # Window splits do not change the result (no window of this plan ends deep in a tail).
    np.testing.assert_array_equal(join_stream(story, whole=True).audio, joined.audio)

    median_jump, p99_jump = typical_jump(story)
    with_joiner = largest_join_jump(joined.audio, joined.maps)
    # "Without": the same trimming, cut abruptly where a common -45 dBFS detector puts the
    # edges of speech, with no margins and no fades.
    abrupt_settings = SeamSettings(fade_ms=0, lead_keep_ms=0, tail_keep_ms=0, silence_db=-45)
    abrupt = join_stream(story, abrupt_settings)
    without = largest_join_jump(abrupt.audio, abrupt.maps)
    assert with_joiner < median_jump < without < p99_jump

    settings = SeamSettings()
    plain_word_gaps = []
    for index, (before, after) in enumerate(itertools.pairwise(story)):
        map_before, map_after = joined.maps[index], joined.maps[index + 1]
        assert map_before is not None and map_after is not None
        onset, voiced_end = speech_edges(before.audio)
        next_onset, _ = speech_edges(after.audio)
        # Speech passes unchanged, but where the engine's audio starts speaking at once (a fade
        # then lands on it: there is no silence to cut in) ...
        assert map_before.source_end is not None
        lo = max(onset, map_before.source_start + FADE)
        hi = min(voiced_end, map_before.source_end - FADE)
        assert hi - lo >= voiced_end - onset - 2 * FADE
        out_start, out_end = map_before.to_output(lo), map_before.to_output(hi)
        np.testing.assert_array_equal(joined.audio[out_start:out_end], before.audio[lo:hi])
        out_end = map_before.to_output(voiced_end)
        # ... and the gap to the next segment's speech is silent and as long as the boundary's
        # pause (a word cut keeps only the margins).
        next_start = map_after.to_output(next_onset)
        gap = joined.audio[out_end:next_start]
        assert np.all(frame_db(gap) <= SILENCE_DB)
        pause = samples(settings.pause_ms(join_kind(before.segment.boundary)))
        # The margins are shorter where the audio has less silence to keep (some segments start
        # speaking at their first sample).
        margins = min(len(before.audio), voiced_end + TAIL) - voiced_end + min(next_onset, LEAD)
        assert len(gap) == max(pause, margins), (index, before.segment)
        if before.segment.boundary is SegmentEnd.WORD:
            plain_word_gaps.append(len(before.audio) - voiced_end + next_onset)
    # Plain concatenation leaves the voice's own silences at word cuts: several times longer.
    assert min(plain_word_gaps) > 3 * WORD_GAP


def test_word_timings_mapped_through_the_joiner_stay_on_their_audio(
    story: list[RenderedSegment],
) -> None:
    joined = join_stream(story)
    rendered_before = 0  # the timeline the session counts today: raw rendered samples
    drift = 0
    for item, segment_map in zip(story, joined.maps, strict=True):
        assert segment_map is not None and segment_map.source_end is not None
        spf = item.utterance.samples_per_frame
        # Where the joiner kept the samples unchanged (all of it but the fades at its edges).
        kept_lo, kept_hi = segment_map.source_start + FADE, segment_map.source_end - FADE
        for word in item.utterance.words:
            lo = min(max(word.start_frame * spf, kept_lo), kept_hi)
            hi = min(max(word.end_frame * spf, kept_lo), kept_hi)
            out_lo, out_hi = segment_map.to_output(lo), segment_map.to_output(hi)
            # A word's mapped span holds exactly the audio the engine rendered for it.
            np.testing.assert_array_equal(joined.audio[out_lo:out_hi], item.audio[lo:hi])
        drift = rendered_before - segment_map.output_start + segment_map.source_start
        rendered_before += len(item.audio)
    # Timing words on the untrimmed timeline would be seconds late by the end of this text.
    assert drift > samples(1500.0)


def active_level(audio: Audio) -> float:
    """Mean power of the clearly voiced frames, in dBFS (a speech level, not a peak)."""
    levels = frame_db(audio)
    loud = levels[levels > SPEECH_DB]
    return float(10 * np.log10(np.mean(10 ** (loud / 10))))


def peak_db(audio: Audio) -> float:
    return float(20 * np.log10(np.abs(audio).max()))


def test_one_loudness_for_the_whole_stream(engine: PiperEngine) -> None:
    text = (
        "We walked slowly to the river after breakfast. My brother carried the basket and the "
        "blanket. The weather was warm and the sky was clear. Hmm. Nobody expected the rain to "
        "arrive so early. We ran back home and laughed about it later."
    )
    segments = segment_text(text, ChunkingConfig(strategy=Strategy.SENTENCE))
    rendered = render_stream(engine, segments)
    joined = join_stream(rendered)
    levels, peaks, quiet = [], [], None
    for item, segment_map in zip(rendered, joined.maps, strict=True):
        assert segment_map is not None and segment_map.output_end is not None
        out = joined.audio[segment_map.output_start : segment_map.output_end]
        if item.segment.text == "Hmm.":
            quiet = (active_level(out), peak_db(out))
        else:
            levels.append(active_level(out))
            peaks.append(peak_db(out))
    assert quiet is not None and len(levels) == 5
    # Similar sentences of one stream come out at one speech level ...
    assert max(levels) - min(levels) < 3.0
    # ... and nothing scales a segment to a peak: the quiet word keeps a much lower peak than
    # the sentences (peak normalization would have raised it, and its level with it, by as much)
    # while its speech level stays with theirs.
    assert max(peaks) < -1.0
    assert quiet[1] < float(np.median(peaks)) - 3.0
    assert abs(quiet[0] - float(np.median(levels))) < 3.0
