"""A sentence that starts with a lead and ends with its takeover, through the session and the real
scheduler: word timings, audio continuity and the look-ahead, as a client sees them."""

from __future__ import annotations

import time
from collections.abc import Iterator

import numpy as np
import pytest

from voxflow.connection.local import LocalRunner
from voxflow.engines.base import VoiceSettings
from voxflow.engines.piper import PiperEngine
from voxflow.engines.registry import VoiceRegistry
from voxflow.runtime.scheduler import Scheduler
from voxflow.runtime.scheduler_settings import SchedulerSettings
from voxflow.session.events import AudioOut, ClientEvent, DoneOut, SubmitSegment, TimestampsOut
from voxflow.session.options import SessionConfig, StartOptions
from voxflow.session.session import Session
from voxflow.text.chunking import AUTO_MODE_LOOKAHEAD_S, DEFAULT_LOOKAHEAD_S, ChunkingConfig
from voxflow.transports.elevenlabs.alignment import CharAligner

SENTENCE = (
    "I can definitely help you reschedule your appointment to next Tuesday afternoon if that "
    "works better for you."
)
REPLY = SENTENCE + " Would you like the morning or the afternoon?"


@pytest.fixture
def scheduler(engine: PiperEngine) -> Iterator[Scheduler]:
    scheduler = Scheduler(engine, SchedulerSettings(workers=2))
    yield scheduler
    scheduler.shutdown()


def _runner(scheduler: Scheduler, **chunking: object) -> LocalRunner:
    config = SessionConfig(default_voice="joe", chunking=ChunkingConfig(**chunking))  # type: ignore[arg-type]
    return LocalRunner(Session(config, VoiceRegistry().get), scheduler)


def _start(runner: LocalRunner) -> None:
    options = StartOptions(output_format="pcm_22050", settings=VoiceSettings(seed=4))
    runner.session.start("a", options, runner.now())


def _words(events: list[ClientEvent]) -> list[tuple[str, float, float, int, int]]:
    return [
        (w.word, w.start_ms, w.end_ms, w.char_start, w.char_end)
        for e in events
        if isinstance(e, TimestampsOut)
        for w in e.words
    ]


def _audio(events: list[ClientEvent]) -> np.ndarray:
    data = b"".join(e.data for e in events if isinstance(e, AudioOut))
    return np.frombuffer(data, dtype="<i2").astype(np.float32) / 32768.0


def _check_timeline(events: list[ClientEvent], text: str) -> None:
    words = _words(events)
    assert [w[0] for w in words] == [t.strip(".,?") for t in text.split()]
    for (_, start, end, char_start, char_end), word in zip(words, text.split(), strict=True):
        assert start <= end
        assert text[char_start:char_end] == word.strip(".,?")
    starts = [w[1] for w in words]
    assert starts == sorted(starts)
    duration_ms = 1000.0 * len(_audio(events)) / 22050
    assert words[-1][2] <= duration_ms + 1.0


def test_a_long_first_sentence_is_a_lead_then_taken_over_whole() -> None:
    session = Session(SessionConfig(default_voice="joe"), VoiceRegistry().get)
    session.text("a", REPLY, 0.0)
    session.end("a", 0.0)
    submits = [o for o in session.drain() if isinstance(o, SubmitSegment)]
    # A lead, then the first sentence whole (taking over), then the second sentence.
    assert [s.request.lead for s in submits] == [True, False, False]
    assert submits[1].request.takeover is not None and submits[1].request.text == SENTENCE
    assert submits[1].request.takeover.lead_tag == submits[0].request.tag


def test_a_whole_reply_is_heard_once_in_order(scheduler: Scheduler) -> None:
    runner = _runner(scheduler)
    _start(runner)
    runner.session.text("a", REPLY, runner.now())
    runner.session.end("a", runner.now())
    events = runner.until_finished("a")
    assert isinstance(events[-1], DoneOut)
    _check_timeline(events, REPLY)


def test_character_alignment_covers_the_text_with_words_timed_window_by_window(
    scheduler: Scheduler,
) -> None:
    runner = _runner(scheduler)
    _start(runner)
    runner.session.text("a", REPLY, runner.now())
    runner.session.end("a", runner.now())
    runner.until_finished("a")
    aligner = CharAligner()
    chunks = []
    for event in runner.events:
        if isinstance(event, TimestampsOut):
            aligner.add(event, REPLY)
        elif isinstance(event, AudioOut):
            chunks.append(aligner.take(event))
    text = "".join(chunk.text for chunk in chunks) + aligner.finish(REPLY).text
    assert text == REPLY
    # The lead sent its words in several events: more events than pieces.
    assert sum(isinstance(e, TimestampsOut) for e in runner.events) > 3
    starts = [char.start_ms for chunk in chunks for char in chunk.chars]
    assert starts == sorted(starts)


def test_streamed_tokens_are_heard_once_in_order(scheduler: Scheduler) -> None:
    runner = _runner(scheduler)
    _start(runner)
    tokens = [REPLY[i : i + 4] for i in range(0, len(REPLY), 4)]
    began = time.monotonic()
    for number, token in enumerate(tokens):
        # 50 tokens/s, on an absolute schedule; results are applied while waiting.
        while (delay := began + number / 50 - time.monotonic()) > 0:
            runner.step(delay)
        runner.session.text("a", token, runner.now())
        runner.dispatch()
    runner.session.end("a", runner.now())
    runner.until_finished("a")
    _check_timeline(runner.events, REPLY)


@pytest.mark.parametrize(
    ("auto_mode", "lookahead_s"), [(False, DEFAULT_LOOKAHEAD_S), (True, AUTO_MODE_LOOKAHEAD_S)]
)
def test_a_sentence_that_ends_the_buffer_is_spoken_after_the_lookahead(
    scheduler: Scheduler, auto_mode: bool, lookahead_s: float
) -> None:
    runner = _runner(scheduler, auto_mode=auto_mode)
    _start(runner)
    runner.session.text("a", "How can I help?", runner.now())
    sent = time.monotonic()
    out: list[ClientEvent] = []
    while not any(isinstance(e, AudioOut) for e in out):
        assert time.monotonic() - sent < 30
        out += runner.step(0.01)
    # No flush and no further text: the look-ahead released it, and not before its time
    # (150 ms; in auto mode, where the client sends whole sentences, 20 ms).
    assert time.monotonic() - sent >= lookahead_s
    assert [w[0] for w in _words(out)][:1] == ["How"]
    runner.close()


def test_a_client_that_decodes_mp3_gets_a_lead_long_enough_to_start_on() -> None:
    def lead_text(output_format: str) -> str:
        session = Session(SessionConfig(default_voice="joe"), VoiceRegistry().get)
        session.start("a", StartOptions(output_format=output_format), 0.0)
        session.text("a", REPLY, 0.0)
        submits = [o for o in session.drain() if isinstance(o, SubmitSegment)]
        assert submits[0].request.lead
        return submits[0].request.text

    short, long = lead_text("pcm_24000"), lead_text("mp3_22050_32")
    # An FFmpeg decoder reads ~1.7 s of MP3 before it plays: the lead carries that much speech.
    assert long.startswith(short) and len(long) > 25 >= len(short)


def _pause_ms(events: list[ClientEvent], before: str) -> float:
    """The silence between the word before ``before`` and ``before`` (word timings)."""
    words = _words(events)
    index = next(i for i, w in enumerate(words) if w[0] == before)
    return words[index][1] - words[index - 1][2]


def test_a_sentence_sent_whole_behind_audio_in_hand_is_joined_as_one_sent_with_the_rest(
    scheduler: Scheduler,
) -> None:
    # A client that flushes each sentence (Pipecat's Cartesia and ElevenLabs services) starts
    # a new turn each time, so each sentence is cut into a lead and its takeover; behind the
    # first one's audio the lead is skipped, and the takeover joins the sentence before it as
    # the whole reply's second sentence does.
    flushed = _runner(scheduler)
    _start(flushed)
    for sentence in (SENTENCE + " ", "Would you like the morning or the afternoon?"):
        flushed.session.text("a", sentence, flushed.now())
        flushed.session.flush("a", flushed.now())
    flushed.session.end("a", flushed.now())
    events = flushed.until_finished("a")
    whole = _runner(scheduler)
    _start(whole)
    whole.session.text("a", REPLY, whole.now())
    whole.session.end("a", whole.now())
    reference = whole.until_finished("a")
    _check_timeline(events, REPLY)
    assert _pause_ms(events, "Would") == pytest.approx(_pause_ms(reference, "Would"), abs=30)
