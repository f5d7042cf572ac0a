"""The answers to HTTP requests, without a server: when the head goes out, how the body ends,
and each endpoint's body (OpenAI audio and SSE, ElevenLabs audio, JSON lines, one object)."""

from __future__ import annotations

import base64
import json

import pytest

from voxflow.session.events import (
    AudioOut,
    CancelledOut,
    ContextMetrics,
    DoneOut,
    ErrorOut,
    TimestampsOut,
    WordTiming,
)
from voxflow.transports.elevenlabs.http_protocol import TtsAudio, TtsLines, TtsWhole
from voxflow.transports.openai.protocol import SpeechAudio, SpeechEvents
from voxflow.transports.request_protocol import (
    COMPLETE,
    STALLED,
    TRUNCATE,
    Head,
    RequestProtocol,
)

METRICS = ContextMetrics(
    ttfa_ms=1.0, audio_ms=20.0, synth_ms=1.0, rtf=0.05, chunks=2, deadline_misses=0
)
DONE = DoneOut("c", METRICS)
TEXT = "Hi there."


def _audio(seq: int, data: bytes = b"\x01\x02", offset_ms: float = 0.0) -> AudioOut:
    return AudioOut("c", seq, offset_ms, 10.0, data)


def _protocols() -> list[RequestProtocol]:
    return [SpeechAudio("audio/mpeg"), SpeechEvents(TEXT), TtsAudio("audio/mpeg")]


@pytest.mark.parametrize("protocol", _protocols(), ids=lambda p: type(p).__name__)
def test_the_head_goes_out_once_with_the_first_body_part(protocol: RequestProtocol) -> None:
    first = protocol.reply(_audio(0))
    assert first.frames[0] == Head(200, protocol.media_type)
    assert len(first.frames) == 2 and first.close is None
    second = protocol.reply(_audio(1))
    assert not any(isinstance(f, Head) for f in second.frames) and second.frames
    end = protocol.reply(DONE)
    assert end.close == COMPLETE


@pytest.mark.parametrize("protocol", _protocols(), ids=lambda p: type(p).__name__)
def test_an_error_before_the_head_is_the_whole_answer(protocol: RequestProtocol) -> None:
    answer = protocol.reply(ErrorOut("c", "synthesis_failed", "the engine broke", True))
    head, body = answer.frames
    assert head == Head(500, "application/json")
    assert isinstance(body, bytes) and "the engine broke" in body.decode()
    assert answer.close == COMPLETE  # a proper error response, ended properly


@pytest.mark.parametrize("protocol", _protocols(), ids=lambda p: type(p).__name__)
def test_an_error_after_the_head_truncates_the_body(protocol: RequestProtocol) -> None:
    protocol.reply(_audio(0))
    answer = protocol.reply(ErrorOut("c", "encoding_failed", "encoding failed: boom"))
    assert not answer.frames
    assert answer.close == TRUNCATE != COMPLETE


def test_a_request_without_audio_still_gets_its_head_at_done() -> None:
    protocol = SpeechAudio("audio/wav")
    assert protocol.reply(_audio(0, data=b"")).frames == []  # an empty piece starts nothing
    end = protocol.reply(DONE)
    assert end.frames == [Head(200, "audio/wav")] and end.close == COMPLETE


def test_closes_and_the_events_a_request_never_gets() -> None:
    protocol = SpeechAudio("audio/mpeg")
    assert protocol.receive(b"anything") is None
    assert protocol.peer_gone() is True and protocol.deadline() is None
    assert protocol.stall_close == STALLED and protocol.failure_close == TRUNCATE
    cancelled = CancelledOut("c", "", 0.0, 0.0, 0.0)
    assert protocol.reply(cancelled).frames == () and protocol.reply(cancelled).close is None


def test_error_bodies_are_each_protocols_shape() -> None:
    openai = SpeechAudio("audio/mpeg").reply(ErrorOut("c", "unknown_speaker", "no speaker 7"))
    head, body = openai.frames
    assert head == Head(400, "application/json")
    assert isinstance(body, bytes)
    assert json.loads(body)["error"]["code"] == "unknown_speaker"
    eleven = TtsAudio("audio/mpeg").reply(ErrorOut("c", "unknown_voice", "no voice x"))
    head, body = eleven.frames
    assert head == Head(404, "application/json")
    assert isinstance(body, bytes)
    assert json.loads(body) == {"detail": {"status": "voice_not_found", "message": "no voice x"}}


def _sse(frames: object) -> list[dict[str, object]]:
    assert isinstance(frames, list | tuple)
    events = []
    for frame in frames:
        if isinstance(frame, bytes):
            assert frame.startswith(b"data: ") and frame.endswith(b"\n\n")
            events.append(json.loads(frame[len(b"data: ") :]))
    return events


def test_sse_sends_deltas_then_done_with_usage() -> None:
    protocol = SpeechEvents(TEXT)
    deltas = _sse(protocol.reply(_audio(0, b"ab")).frames) + _sse(
        protocol.reply(_audio(1, b"cd")).frames
    )
    assert [d["type"] for d in deltas] == ["speech.audio.delta"] * 2
    assert [base64.b64decode(str(d["audio"])) for d in deltas] == [b"ab", b"cd"]
    (done,) = _sse(protocol.reply(DONE).frames)
    assert done["type"] == "speech.audio.done"
    usage = done["usage"]
    assert isinstance(usage, dict)
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]


def _timings() -> TimestampsOut:
    return TimestampsOut(
        "c",
        (
            WordTiming("Hi", 0.0, 100.0, 0, 2),
            WordTiming("there", 120.0, 300.0, 3, 8),
        ),
    )


def test_json_lines_carry_each_chunks_characters_then_the_rest() -> None:
    protocol = TtsLines(TEXT)
    assert protocol.reply(_timings()).frames == []  # timings wait for their audio
    lines = [*protocol.reply(AudioOut("c", 0, 0.0, 400.0, b"pcm")).frames]
    lines += protocol.reply(DONE).frames
    assert isinstance(lines[0], Head) and lines[0].media_type == "application/x-ndjson"
    objects = [json.loads(line) for line in lines[1:] if isinstance(line, bytes)]
    heard = "".join("".join(o["alignment"]["characters"]) for o in objects if o["alignment"])
    assert heard == TEXT  # every character once, in order
    assert base64.b64decode(objects[0]["audio_base64"]) == b"pcm"
    starts = [
        t
        for o in objects
        if o["alignment"]
        for t in o["alignment"]["character_start_times_seconds"]
    ]
    assert starts == sorted(starts)


def test_the_whole_object_comes_at_the_end() -> None:
    protocol = TtsWhole(TEXT)
    protocol.reply(_timings())
    assert protocol.reply(AudioOut("c", 0, 0.0, 200.0, b"ab")).frames == []
    assert protocol.reply(AudioOut("c", 1, 200.0, 200.0, b"cd")).frames == []
    head, body = protocol.reply(DONE).frames
    assert head == Head(200, "application/json")
    assert isinstance(body, bytes)
    whole = json.loads(body)
    assert base64.b64decode(whole["audio_base64"]) == b"abcd"
    assert "".join(whole["alignment"]["characters"]) == TEXT
    assert whole["normalized_alignment"] == whole["alignment"]
