from __future__ import annotations

import itertools
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from voxflow.connection.local import drain_encoded
from voxflow.engines.base import VoiceSettings
from voxflow.engines.piper import PiperEngine
from voxflow.engines.registry import VoiceRegistry
from voxflow.runtime.jobs import Drained, Prepared, Rendered
from voxflow.session.events import AudioOut, SubmitSegment, TimestampsOut, WordTiming
from voxflow.session.options import SessionConfig, StartOptions
from voxflow.session.session import Session
from voxflow.text.chunking import ChunkingConfig
from voxflow.transports.elevenlabs.alignment import CharAligner, ChunkAlignment


def _audio(offset_ms: float, duration_ms: float, seq: int = 0) -> AudioOut:
    return AudioOut("c", seq, offset_ms, duration_ms, b"")


def _words(text: str, spans: list[tuple[str, float, float]]) -> TimestampsOut:
    """Word timings for ``text``: each word found after the previous one."""
    out = []
    cursor = 0
    for word, start, end in spans:
        at = text.index(word, cursor)
        out.append(WordTiming(word, start, end, at, at + len(word)))
        cursor = at + len(word)
    return TimestampsOut("c", tuple(out))


def test_characters_get_word_spans_gaps_and_tails() -> None:
    text = " Hi, you. "
    aligner = CharAligner()
    aligner.add(_words(text, [("Hi", 100, 200), ("you", 300, 330)]), text)
    first = aligner.take(_audio(0, 260))
    second = aligner.take(_audio(260, 250))
    assert first.text == " Hi, "
    assert second.text == "you. "
    # The leading space sits at the first word's start; "Hi" splits 100..200; ", " shares the
    # pause 200..300; "you" splits 300..330; ". " sits at its end with no duration.
    assert [c.start_ms for c in first.chars] == [100, 100, 150, 200, 250]
    assert [c.duration_ms for c in first.chars] == [0, 50, 50, 50, 50]
    assert first.relative_starts_ms() == [100, 100, 150, 200, 250]
    assert second.relative_starts_ms() == [40, 50, 60, 70, 70]
    assert second.durations_ms() == [10, 10, 10, 0, 0]
    assert aligner.finish(text).chars == ()


def test_whitespace_known_late_prefixes_the_next_segment_and_the_rest_comes_at_finish() -> None:
    aligner = CharAligner()
    text = "One."
    aligner.add(_words(text, [("One", 0, 90)]), text)
    assert aligner.take(_audio(0, 100)).text == "One."
    text += "  two"  # the spaces arrived after the first segment was timed
    aligner.add(TimestampsOut("c", (WordTiming("two", 150, 250, 6, 9),)), text)
    chunk = aligner.take(_audio(100, 200))
    assert chunk.text == "  two"
    assert chunk.relative_starts_ms()[:2] == [50, 50]
    text += " \n"
    rest = aligner.finish(text)
    assert rest.text == " \n"
    assert rest.offset_ms == 300
    assert rest.relative_starts_ms() == [0, 0]


def test_a_character_started_in_an_earlier_chunk_is_clamped_to_zero() -> None:
    aligner = CharAligner()
    aligner.add(_words("abcd", [("abcd", 0, 400)]), "abcd")
    first = aligner.take(_audio(0, 150))
    assert first.text == "ab"  # c starts at 200
    chunk = aligner.take(_audio(150, 200))
    assert chunk.text == "cd"
    assert chunk.relative_starts_ms() == [50, 150]
    late = ChunkAlignment(500.0, chunk.chars)
    assert late.relative_starts_ms() == [0, 0]


@dataclass(frozen=True)
class _Script:
    text: str
    segments: list[tuple[int, list[WordTiming], float, float]]  # known chars, words, start, end
    cuts: list[float]  # chunk boundaries, 0 .. total audio


@st.composite
def _scripts(draw: st.DrawFn) -> _Script:
    words = st.text(alphabet="abcdefgh'", min_size=1, max_size=6).filter(lambda w: w[0] != "'")
    separators = st.sampled_from([" ", "  ", ", ", " - ", " (", ") "])
    endings = st.sampled_from(["", ".", "!", '?"', "..."])
    spaces = st.sampled_from(["", " ", "  ", "\n", " \t "])
    text = draw(spaces)
    segments = []
    clock = 0.0
    for _ in range(draw(st.integers(1, 4))):
        seg_start = clock
        timings = []
        n = draw(st.integers(1, 5))
        for i in range(n):
            word = draw(words)
            clock += draw(st.floats(0, 80))
            duration = draw(st.floats(1, 300))
            timings.append(
                WordTiming(word, clock, clock + duration, len(text), len(text) + len(word))
            )
            text += word
            clock += duration
            if i < n - 1:
                text += draw(separators)
        text += draw(endings)
        last_word_end = timings[-1].char_end
        text += draw(spaces)
        clock += draw(st.floats(0, 200))  # trailing silence
        segments.append((last_word_end, timings, seg_start, clock))
        if draw(st.booleans()):
            text += " "
    # How much text was known when each segment was timed: at least its words.
    known = [draw(st.integers(end, len(text))) for end, *_ in segments]
    known = [max(k, max(known[:i], default=0)) for i, k in enumerate(known)]
    segments = [
        (k, words_, start, end) for k, (_, words_, start, end) in zip(known, segments, strict=True)
    ]
    total = clock
    inner = draw(st.lists(st.floats(0.1, max(0.2, total - 0.1)), max_size=12))
    cuts = sorted({0.0, *[c for c in inner if 0 < c < total], total})
    if len(cuts) == 1:
        cuts.append(total + 1.0)
    return _Script(text, segments, cuts)


@settings(max_examples=300, deadline=None)
@given(_scripts())
def test_property_every_character_once_in_order_with_its_chunk(script: _Script) -> None:
    aligner = CharAligner()
    pending = list(script.segments)
    chunks: list[ChunkAlignment] = []
    previous_end = 0.0
    for seq, (start, cut) in enumerate(itertools.pairwise(script.cuts)):
        duration = cut - start
        end = start + duration  # the end as take() computes it, rounding included
        # Timestamps of a segment come before any of its audio.
        while pending and pending[0][2] < end:
            known, words, _, _ = pending.pop(0)
            aligner.add_words(words, script.text[:known])
        chunk = aligner.take(_audio(start, duration, seq))
        for char in chunk.chars:
            assert previous_end <= char.start_ms < end
            assert char.duration_ms >= 0
        relative = chunk.relative_starts_ms()
        assert all(r >= 0 for r in relative)
        assert relative == sorted(relative)
        chunks.append(chunk)
        previous_end = end
    for known, words, _, _ in pending:
        aligner.add_words(words, script.text[:known])
    chunks.append(aligner.finish(script.text))

    assert "".join(c.text for c in chunks) == script.text
    starts = [char.start_ms for c in chunks for char in c.chars]
    assert starts == sorted(starts)
    # Each word's first character starts with the word.
    flat = [char for c in chunks for char in c.chars]
    for _, words, _, _ in script.segments:
        for word in words:
            assert flat[word.char_start].start_ms == pytest.approx(word.start_ms)
            assert flat[word.char_end - 1].start_ms < word.end_ms


def test_real_engine_alignment_reproduces_the_text_and_its_words(engine: PiperEngine) -> None:
    # Renders every request from its start (no scheduler): so no leads, whose takeovers start
    # mid-utterance (tests/session/test_session_takeover.py aligns those through the real
    # scheduler).
    config = SessionConfig(default_voice="joe", chunking=ChunkingConfig(lead_cost=None))
    session = Session(config, VoiceRegistry().get)
    session.start("c", StartOptions(output_format="pcm_16000", settings=VoiceSettings(seed=4)), 0)
    pieces = [" ", "Good morning, ", "everyone. The meeting ", "starts at noon, ", "sharp! "]
    text = "".join(pieces)
    for piece in pieces:
        session.text("c", piece, 0.1)
    session.end("c", 0.2)
    submits = [o for o in session.drain() if isinstance(o, SubmitSegment)]
    assert len(submits) >= 2
    for submit in submits:
        request = submit.request
        utterance = engine.prepare(request.text, request.voice, request.settings)
        session.synthesis_event(submit.serial, Prepared(request.tag, utterance, 0.0), 1.0)
        audio = engine.render(utterance, 0, utterance.num_frames)
        # Uneven windows, so chunk edges fall inside words.
        edges = sorted({0, utterance.num_frames, *range(7, utterance.num_frames, 23)})
        for a, b in itertools.pairwise(edges):
            samples = audio[a * utterance.samples_per_frame : b * utterance.samples_per_frame]
            last = b == utterance.num_frames
            event = Rendered(request.tag, a, b, samples, last, 0.0, 0.0, first=a == 0)
            session.synthesis_event(submit.serial, event, 1.0)
    session.synthesis_event(submits[0].serial, Drained(), 2.0)

    aligner = CharAligner()
    chunks = []
    words: list[WordTiming] = []
    for output in drain_encoded(session, lambda: 2.0):
        if isinstance(output, TimestampsOut):
            aligner.add(output, text)
            words.extend(output.words)
        elif isinstance(output, AudioOut):
            chunks.append((output, aligner.take(output)))
    rest = aligner.finish(text)

    assert "".join(a.text for _, a in chunks) + rest.text == text
    assert len(chunks) > 10
    # Splitting the characters on spaces, as Pipecat does, gives back the client's words.
    assert "".join(a.text for _, a in chunks).split() == text.split()
    by_index = [(chunk, char) for chunk, a in chunks for char in a.chars]
    for word in words:
        chunk, char = by_index[word.char_start]
        assert char.start_ms == pytest.approx(word.start_ms)
        assert chunk.offset_ms <= word.start_ms < chunk.offset_ms + chunk.duration_ms
    total = sum(chunk.duration_ms for chunk, _ in chunks)
    assert words[-1].end_ms <= total + 5
