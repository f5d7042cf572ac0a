"""``voxflow.connection.speaker``: one-shot synthesis through the server's own path (session,
scheduler, seams)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import replace

import numpy as np
import pytest

from voxflow.connection.speaker import LocalSpeaker, SpokenWords
from voxflow.engines.base import VoiceNotFoundError, VoiceSettings
from voxflow.engines.piper import PiperEngine
from voxflow.session.events import AudioOut
from voxflow.session.options import SessionConfig, StartOptions
from voxflow.session.session import Session
from voxflow.text.chunking import ChunkingConfig, Strategy

LONG = (
    "The quick brown fox jumps over the lazy dog while the orchestra, tuning its instruments "
    "in the distance, prepares for a long evening of music that nobody will forget."
)


@pytest.fixture
def streaming(engine: PiperEngine) -> Iterator[LocalSpeaker]:
    with LocalSpeaker(engine, SessionConfig("joe")) as speaker:
        yield speaker


@pytest.fixture
def sentence_by_sentence(engine: PiperEngine) -> Iterator[LocalSpeaker]:
    config = SessionConfig("joe", chunking=ChunkingConfig(strategy=Strategy.SENTENCE))
    with LocalSpeaker(engine, config, streamed=False) as speaker:
        yield speaker


def test_streaming_reaches_first_audio_sooner_than_whole_sentences(
    streaming: LocalSpeaker, sentence_by_sentence: LocalSpeaker
) -> None:
    options = StartOptions(settings=VoiceSettings(seed=3))
    streamed = streaming.say(LONG, options)
    baseline = sentence_by_sentence.say(LONG, options)
    # Ordering, not a timing goal: the first window of a lead must beat the text stage plus a
    # whole-sentence render by a wide margin on any machine.
    assert streamed.stats.ttfa_ms < baseline.stats.ttfa_ms / 2
    # The server's path: a lead cut inside the sentence and its takeover, in windows.
    assert streamed.stats.segments == 2
    assert LONG.startswith(streamed.pieces[0]) and len(streamed.pieces[0]) < len(LONG) / 2
    assert streamed.stats.chunks > streamed.stats.segments
    assert baseline.pieces == (LONG,)
    assert baseline.stats.chunks <= 2  # one window (the joiner may hold back its tail)
    # The lead's cut is joined, not stacked: the same speech, give or take the seam.
    assert streamed.stats.audio_ms == pytest.approx(baseline.stats.audio_ms, rel=0.1)


def test_the_words_come_with_the_audio_tagged_with_the_request_that_timed_them(
    streaming: LocalSpeaker, sentence_by_sentence: LocalSpeaker
) -> None:
    options = StartOptions(settings=VoiceSettings(seed=3))
    streamed = streaming.say(LONG, options)
    words = streamed.words
    # Every written word, once and in order, inside the audio, each at its place in the text.
    assert [w.word for w in words] == [w.strip(",.") for w in LONG.split()]
    for word in words:
        assert LONG[word.char_start : word.char_end] == word.word
    starts = [w.start_ms for w in words]
    assert starts == sorted(starts)
    assert words[-1].end_ms <= streamed.stats.audio_ms
    # The lead times its words window by window, its takeover the rest of the sentence.
    assert {t.piece for t in streamed.timings} == {0, 1}
    lead = [w for t in streamed.timings if t.piece == 0 for w in t.words]
    assert lead and lead[-1].char_end <= len(streamed.pieces[0])
    assert len([t for t in streamed.timings if t.piece == 0]) > 1
    # Whole sentences: one request, and one event of words, per sentence.
    two = "Sure, I can do that. See you soon."
    whole = sentence_by_sentence.say(two, options)
    assert whole.pieces == ("Sure, I can do that.", "See you soon.")
    assert [(t.piece, len(t.words)) for t in whole.timings] == [(0, 5), (1, 3)]


def test_the_stream_yields_audio_and_words(streaming: LocalSpeaker) -> None:
    events = list(streaming.stream("Hello there.", StartOptions()))
    assert any(isinstance(e, AudioOut) and e.data for e in events)
    spoken = [e for e in events if isinstance(e, SpokenWords)]
    assert [w.word for e in spoken for w in e.words] == ["Hello", "there"]
    assert all(isinstance(e, AudioOut | SpokenWords) for e in events)


def test_without_a_lead_both_modes_give_the_same_audio(engine: PiperEngine) -> None:
    config = SessionConfig("joe", chunking=ChunkingConfig(strategy=Strategy.FIXED))
    no_lead = replace(config, chunking=replace(config.chunking, lead_cost=None))
    options = StartOptions(settings=VoiceSettings(seed=11))
    with (
        LocalSpeaker(engine, no_lead) as speaker,
        LocalSpeaker(engine, config, streamed=False) as whole_speaker,
    ):
        streamed = speaker.say(LONG, options)
        whole = whole_speaker.say(LONG, options)
    assert streamed.pieces == whole.pieces
    assert len(streamed.pieces) > 1
    assert streamed.stats.chunks > whole.stats.chunks
    assert streamed.audio.shape == whole.audio.shape
    error = np.linalg.norm(streamed.audio - whole.audio) / np.linalg.norm(whole.audio)
    assert error < 1e-2  # 16-bit PCM both ways; windows differ from one run by rounding only


def test_stream_yields_pcm_at_the_voice_rate_or_the_rate_asked_for(
    streaming: LocalSpeaker,
) -> None:
    native = streaming.say("Hello there.", StartOptions(settings=VoiceSettings(seed=1)))
    assert native.sample_rate == 22050
    resampled = streaming.say(
        "Hello there.", StartOptions(output_format="mp3_44100_128", settings=VoiceSettings(seed=1))
    )
    assert resampled.sample_rate == 44100
    assert resampled.stats.audio_ms == pytest.approx(native.stats.audio_ms, rel=0.01)


def test_closing_the_stream_early_stops_the_synthesis(streaming: LocalSpeaker) -> None:
    chunks = streaming.stream(LONG * 5, StartOptions())
    first = next(event for event in chunks if isinstance(event, AudioOut))
    assert first.data
    chunks.close()
    # The speaker is free again: nothing of the abandoned text comes out of the next one.
    again = streaming.say("Short.", StartOptions(settings=VoiceSettings(seed=1)))
    assert again.pieces == ("Short.",)


def test_nothing_to_say_and_bad_requests(streaming: LocalSpeaker) -> None:
    with pytest.raises(ValueError, match="empty"):
        streaming.say("  ", StartOptions())
    with pytest.raises(ValueError, match="pronounceable"):
        streaming.say(" — ", StartOptions())
    with pytest.raises(VoiceNotFoundError):
        streaming.say("Hi.", StartOptions(voice="nobody"))
    with pytest.raises(ValueError, match="single speaker"):
        streaming.say("Hi.", StartOptions(settings=VoiceSettings(speaker_id=3)))


def _arriving(text: str, size: int = 4) -> Iterator[str]:
    """``text`` in pieces of ``size`` characters, a little apart, as an LLM's tokens come."""
    for start in range(0, len(text), size):
        time.sleep(0.002)
        yield text[start : start + size]


def test_pieces_as_they_arrive_are_spoken_as_the_whole_text(streaming: LocalSpeaker) -> None:
    options = StartOptions(settings=VoiceSettings(seed=3))
    whole = streaming.say(LONG, options)
    arrived = streaming.say(_arriving(LONG), options)
    # Whatever cuts the pieces' timing made, the text is spoken from its start to its end once.
    assert LONG.startswith(arrived.pieces[0]) and arrived.pieces[-1].endswith("forget.")
    assert arrived.stats.audio_ms == pytest.approx(whole.stats.audio_ms, rel=0.1)


def test_an_error_reading_the_pieces_comes_out_of_say(streaming: LocalSpeaker) -> None:
    class ModelGone(Exception):
        pass

    def failing() -> Iterator[str]:
        yield "Hello there, "
        raise ModelGone("the model went away")

    with pytest.raises(ModelGone, match="went away"):
        streaming.say(failing(), StartOptions())
    # The speaker carries on with the next text.
    assert streaming.say("Still here.", StartOptions()).audio.size > 0


def test_closing_the_stream_stops_reading_the_pieces(streaming: LocalSpeaker) -> None:
    read: list[int] = []

    def endless() -> Iterator[str]:
        while True:
            read.append(1)
            time.sleep(0.001)
            yield "more words "

    chunks = streaming.stream(endless(), StartOptions())
    first = next(event for event in chunks if isinstance(event, AudioOut))
    assert first.data
    chunks.close()
    count = len(read)
    time.sleep(0.2)
    # At most the piece being read as the stream closed: the reader stops at the next one.
    assert len(read) <= count + 1


def test_pieces_are_handed_to_the_session_on_the_thread_that_reads_the_audio(
    streaming: LocalSpeaker, monkeypatch: pytest.MonkeyPatch
) -> None:
    threads: set[int] = set()
    original = Session.text

    def text(self: Session, context_id: str | None, piece: str, now: float) -> None:
        threads.add(threading.get_ident())
        original(self, context_id, piece, now)

    monkeypatch.setattr(Session, "text", text)
    streaming.say(_arriving("Let me check that for you."), StartOptions())
    assert threads == {threading.get_ident()}
