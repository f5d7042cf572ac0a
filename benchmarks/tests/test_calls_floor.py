"""The engine-only floor (``voxflow bench --calls --floor``): the corpus cut into sentences as a
session cuts them, each rendered whole on one thread with the real bundled voice."""

from __future__ import annotations

import pytest

from voxflow import TextLanguage
from voxflow.engines.piper import PiperEngine
from voxflow_bench.calls.floor import EngineFloor, corpus_sentences, measure_floor
from voxflow_bench.corpus import Reply

TINY = (
    Reply("ack", "opener", "Sure thing! I booked it for you."),
    Reply("price", "numbers", "It costs $5. Anything else?"),
)


def test_the_corpus_is_cut_into_sentences_and_normalized() -> None:
    assert corpus_sentences(TINY) == [
        "Sure thing!",
        "I booked it for you.",
        "It costs five dollars.",
        "Anything else?",
    ]


def test_the_floor_renders_every_sentence_whole_on_one_thread(engine: PiperEngine) -> None:
    floor = measure_floor(engine, "joe", TINY)
    assert (floor.voice, floor.sentences) == ("joe", 4)
    # Four short sentences: a few seconds of audio, a fraction of a CPU second for each stage.
    assert 2.0 < floor.audio_s < 10.0
    assert floor.text_stage_cpu_s > 0 and floor.render_cpu_s > 0
    assert floor.render_cpu_s > floor.text_stage_cpu_s  # the decoder is the bulk of it
    # One intra-op thread: ONNX Runtime ran on this thread, so its time is the process's
    # (within the clock's resolution and this test process's other threads).
    thread_s = floor.text_stage_cpu_s + floor.render_cpu_s
    assert floor.process_cpu_s == pytest.approx(thread_s, rel=0.2, abs=0.05)
    assert floor.per_audio_s == pytest.approx(thread_s / floor.audio_s)
    assert 0 < floor.per_audio_s < 1.0  # Piper renders far faster than real time


def test_the_floor_line_and_json() -> None:
    floor = EngineFloor("joe", 110, 400.0, 4.0, 28.0, 32.1)
    assert floor.line() == (
        "engine floor (whole sentences, one thread): text stage 0.0100 + render 0.0700 = "
        "0.0800 CPU s per audio s (110 sentences, 400.0 s of audio, voice joe)"
    )
    assert floor.as_dict() == {
        "voice": "joe",
        "sentences": 110,
        "audio_s": 400.0,
        "text_stage_cpu_s": 4.0,
        "render_cpu_s": 28.0,
        "process_cpu_s": 32.1,
        "text_stage_per_audio_s": 0.01,
        "render_per_audio_s": 0.07,
        "per_audio_s": 0.08,
    }


def test_a_corpus_without_a_sentence_is_refused(engine: PiperEngine) -> None:
    with pytest.raises(ValueError, match="no sentence"):
        measure_floor(engine, "joe", (Reply("blank", "none", "   "),))


def test_japanese_replies_are_cut_and_normalized_as_japanese() -> None:
    replies = (Reply("ja", "numbers", "かしこまりました。合計は3,000円です。"),)
    assert corpus_sentences(replies, TextLanguage.JAPANESE) == [
        "かしこまりました。",
        "合計は三千円です。",
    ]
    # Read as English, the same text is one sentence (no space after its marks), its number
    # left as digits.
    assert corpus_sentences(replies) == ["かしこまりました。合計は3,000円です。"]
