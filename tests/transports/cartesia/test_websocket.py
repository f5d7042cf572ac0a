"""``WS /tts/websocket`` against a real server: the official ``cartesia`` SDK, and the exact
messages Pipecat's ``CartesiaTTSService`` and LiveKit's cartesia plugin send."""

from __future__ import annotations

import base64
import contextlib
import json
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from websockets.sync.client import ClientConnection, connect

from tests.support.cartesia_sdk import S16_24K, VOICE, sdk_connection

LONG = (
    "The quick brown fox jumps over the lazy dog while the orchestra, tuning its instruments "
    "in the distance, prepares for a long evening of music that nobody will forget. "
)


def _ws_url(server_url: str, query: str = "") -> str:
    return server_url.replace("http://", "ws://") + "/tts/websocket" + query


@pytest.fixture
def raw_ws(server_url: str) -> Iterator[ClientConnection]:
    headers = {"X-API-Key": "sk_test", "Cartesia-Version": "2026-03-01"}
    with connect(_ws_url(server_url), additional_headers=headers, max_size=None) as ws:
        yield ws


def _send(ws: ClientConnection, **message: Any) -> None:
    ws.send(json.dumps(message))


def _recv(ws: ClientConnection) -> dict[str, Any]:
    message = json.loads(ws.recv(timeout=60))
    assert isinstance(message, dict)
    # Every message names its context (Pipecat reads msg["context_id"] from each).
    assert "context_id" in message and "type" in message
    return message


def _until_done(ws: ClientConnection, cid: str) -> list[dict[str, Any]]:
    """Messages until ``cid``'s done (or error)."""
    seen: list[dict[str, Any]] = []
    while True:
        message = _recv(ws)
        seen.append(message)
        if message["context_id"] == cid and message["type"] in ("done", "error"):
            return seen


def _audio(messages: list[dict[str, Any]], cid: str) -> bytes:
    return b"".join(
        base64.b64decode(m["data"])
        for m in messages
        if m["type"] == "chunk" and m["context_id"] == cid
    )


def _words(messages: list[dict[str, Any]], cid: str) -> list[tuple[str, float, float]]:
    words: list[tuple[str, float, float]] = []
    for m in messages:
        if m["type"] == "timestamps" and m["context_id"] == cid:
            ts = m["word_timestamps"]
            assert len(ts["words"]) == len(ts["start"]) == len(ts["end"])
            words += zip(ts["words"], ts["start"], ts["end"], strict=True)
    return words


def test_sdk_context_streams_audio_with_word_timestamps(server_url: str) -> None:
    parts = ["Hello there, my friend. ", "The weather is lovely today! ", "Shall we walk?"]
    with sdk_connection(server_url) as connection:
        ctx = connection.context(
            model_id="sonic-3",
            voice=VOICE,
            output_format=S16_24K,
            add_timestamps=True,
            timeout=60,
        )
        for part in parts:
            ctx.push(part)
        ctx.no_more_inputs()
        events = list(ctx.receive())

    assert events[-1].type == "done"
    assert {e.type for e in events} == {"chunk", "timestamps", "done"}
    assert all(e.context_id == ctx._context_id for e in events)
    audio = b"".join(e.audio or b"" for e in events if e.type == "chunk")
    seconds = len(audio) / 2 / 24000
    assert len(audio) % 2 == 0 and seconds > 2.0
    words = [w for e in events if e.type == "timestamps" for w in e.word_timestamps.words]
    starts = [s for e in events if e.type == "timestamps" for s in e.word_timestamps.start]
    # Written words with their punctuation: exactly the transcript's, in order.
    assert words == "".join(parts).split()
    assert starts == sorted(starts) and starts[-1] < seconds


def test_sdk_a_language_the_voice_does_not_speak_is_an_error_of_the_context(
    server_url: str,
) -> None:
    with sdk_connection(server_url) as connection:
        ctx = connection.context(
            model_id="sonic-3", voice=VOICE, output_format=S16_24K, language="ja", timeout=60
        )
        ctx.push("こんにちは。")
        ctx.no_more_inputs()
        events = list(ctx.receive())
    assert [e.type for e in events] == ["error"]  # no audio at all
    (error,) = events
    assert error.type == "error" and error.done is True
    assert (error.error_code, error.status_code) == ("unsupported_language", 400)
    assert error.message == "voice joe speaks en_US, not ja"


def test_sdk_default_float_samples_are_converted_16_bit_pcm(server_url: str) -> None:
    with sdk_connection(server_url) as connection:
        # No output_format: the SDK asks for its default, pcm_f32le at 44.1 kHz.
        ctx = connection.context(model_id="sonic-3", voice=VOICE, timeout=60)
        ctx.push("Good morning.")
        ctx.no_more_inputs()
        audio = b"".join(e.audio or b"" for e in ctx.receive() if e.type == "chunk")
    samples = np.frombuffer(audio, dtype="<f4")
    assert len(audio) % 4 == 0 and len(samples) / 44100 > 0.3
    assert np.all(np.abs(samples) <= 1.0) and np.abs(samples).max() > 0.05
    # Every value is a 16-bit sample over 32768: floats converted from the PCM, not raw bytes.
    scaled = samples.astype(np.float64) * 32768
    assert np.array_equal(scaled, np.round(scaled))


def test_sdk_flush_ids_and_flush_done(server_url: str) -> None:
    with sdk_connection(server_url) as connection:
        ctx = connection.context(model_id="sonic-3", voice=VOICE, output_format=S16_24K, timeout=60)
        ctx.push("Stay hungry, ")
        ctx.push("", flush=True)
        ctx.push("stay foolish.")
        ctx.no_more_inputs()
        events = list(ctx.receive())
    kinds = [(e.type, getattr(e, "flush_id", None)) for e in events]
    assert kinds[-1] == ("done", None)
    assert ("flush_done", 1) in kinds and ("chunk", 1) in kinds and ("chunk", 2) in kinds
    boundary = kinds.index(("flush_done", 1))
    assert all(k != ("chunk", 2) for k in kinds[:boundary])
    assert all(k != ("chunk", 1) for k in kinds[boundary:])


def _pipecat_message(text: str, cid: str, more: bool = True) -> dict[str, Any]:
    """Pipecat 1.14's ``CartesiaTTSService._build_msg``, sentence aggregation."""
    return {
        "transcript": text,
        "continue": more,
        "context_id": cid,
        "model_id": "sonic-3.6",
        "voice": VOICE,
        "output_format": {"container": "raw", "encoding": "pcm_s16le", "sample_rate": 16000},
        "add_timestamps": True,
        "use_normalized_timestamps": False,
        "max_buffer_delay_ms": 0,
        "language": "en",
        "generation_config": {"speed": 1.1},
    }


def test_pipecat_turn_then_barge_in_cancel(raw_ws: ClientConnection) -> None:
    # A whole turn: a sentence per message, then the flush that ends the context.
    for sentence in ["Hi there. ", "How can I help you today?"]:
        raw_ws.send(json.dumps(_pipecat_message(sentence, "turn-1")))
    raw_ws.send(json.dumps(_pipecat_message("", "turn-1", more=False)))
    turn = _until_done(raw_ws, "turn-1")
    assert turn[-1]["type"] == "done" and turn[-1]["done"] is True
    chunks = [m for m in turn if m["type"] == "chunk"]
    assert chunks and all(m["done"] is False and m["status_code"] == 206 for m in chunks)
    assert all(isinstance(m["step_time"], float) for m in chunks)
    words = [w for w, _, _ in _words(turn, "turn-1")]
    assert words == ["Hi", "there.", "How", "can", "I", "help", "you", "today?"]

    # The next turn is interrupted mid-reply: Pipecat cancels it and opens a new context.
    raw_ws.send(json.dumps(_pipecat_message(LONG * 3, "turn-2")))
    first = _recv(raw_ws)
    while first["type"] != "chunk":
        first = _recv(raw_ws)
    _send(raw_ws, context_id="turn-2", cancel=True)
    raw_ws.send(json.dumps(_pipecat_message("Sure.", "turn-3")))
    raw_ws.send(json.dumps(_pipecat_message("", "turn-3", more=False)))
    after = _until_done(raw_ws, "turn-3")
    order = [(m["type"], m["context_id"]) for m in after]
    assert ("done", "turn-2") not in order  # Cartesia sends nothing more of a cancelled context
    first_new = order.index(("chunk", "turn-3"))
    assert ("chunk", "turn-2") not in order[first_new:]
    heard = len(base64.b64decode(first["data"])) + len(_audio(after, "turn-2"))
    assert heard / 2 / 16000 < 15  # far less than the whole text (tens of seconds)
    assert len(_audio(after, "turn-3")) > 0


def test_sentences_sent_without_spaces_stay_sentences(raw_ws: ClientConnection) -> None:
    for sentence in ["Sure thing!", "The table is booked."]:
        raw_ws.send(json.dumps(_pipecat_message(sentence, "joined")))
    raw_ws.send(json.dumps(_pipecat_message("", "joined", more=False)))
    words = [w for w, _, _ in _words(_until_done(raw_ws, "joined"), "joined")]
    # Not "thing!The": a space came between the two sentences.
    assert words == ["Sure", "thing!", "The", "table", "is", "booked."]


def test_livekit_stream_on_a_pooled_socket(server_url: str) -> None:
    """LiveKit 1.8.9's ``SynthesizeStream``: ``?cartesia_version=`` on the URL, a sentence and
    a space per message with ``max_buffer_delay_ms: 0``, ``" "`` with ``continue: false`` at
    the end; the socket is kept for the next stream, with a new context id."""
    url = _ws_url(server_url, "?cartesia_version=2025-04-16")
    base = {
        "model_id": "sonic-3",
        "voice": {"mode": "id", "id": "f786b574-daa5-4673-aa0c-cbe3e8534c02"},
        "output_format": {"container": "raw", "encoding": "pcm_s16le", "sample_rate": 24000},
        "language": "en",
        "add_timestamps": True,
        "max_buffer_delay_ms": 0,
    }
    with connect(url, additional_headers={"X-API-Key": "sk_test"}, max_size=None) as ws:
        for cid, sentences in [("lk1", ["One small step.", "Two more."]), ("lk2", ["Again."])]:
            for sentence in sentences:
                ws.send(json.dumps({**base, "context_id": cid, "transcript": sentence + " ",
                                    "continue": True}))  # fmt: skip
            ws.send(json.dumps({**base, "context_id": cid, "transcript": " ", "continue": False}))
            messages = _until_done(ws, cid)
            assert messages[-1]["type"] == "done"
            assert _audio(messages, cid)
            text = " ".join(sentences) + " "
            # LiveKit finds each word in the text it sent.
            for word, start, end in _words(messages, cid):
                assert word in text and 0 <= start <= end


def test_a_context_with_no_text_is_done_at_once(raw_ws: ClientConnection) -> None:
    _send(raw_ws, context_id="empty", transcript="", output_format=S16_24K, voice=VOICE)
    (done,) = _until_done(raw_ws, "empty")
    assert done["type"] == "done"


@pytest.mark.parametrize(
    ("message", "error_code", "status"),
    [
        ({"voice": {"mode": "id", "id": "no-such-voice"}}, "voice_not_found", 404),
        (
            {"output_format": {"container": "raw", "encoding": "pcm_mulaw", "sample_rate": 16000}},
            "unsupported_format",
            400,
        ),
        ({"output_format": {"container": "mp3", "sample_rate": 24000}}, "unsupported_format", 400),
        ({"transcript": 5}, "invalid_request", 400),
        ({"continue": "yes"}, "invalid_request", 400),
        ({"generation_config": {"speed": "fast"}}, "invalid_voice_settings", 400),
    ],
)
def test_refused_requests_get_cartesia_errors_and_the_socket_goes_on(
    raw_ws: ClientConnection, message: dict[str, Any], error_code: str, status: int
) -> None:
    request = {"context_id": "bad", "transcript": "Hi.", "voice": VOICE, "output_format": S16_24K}
    raw_ws.send(json.dumps({**request, **message}))
    error = _recv(raw_ws)
    assert error["type"] == "error" and error["context_id"] == "bad" and error["done"] is True
    assert error["error_code"] == error_code and error["status_code"] == status
    assert error["title"] and error["message"] in error["error"]
    # The connection (and the context id) are still usable.
    raw_ws.send(json.dumps(request))
    assert _until_done(raw_ws, "bad")[-1]["type"] == "done"


def test_frames_that_are_not_requests_are_errors_of_the_connection(
    raw_ws: ClientConnection,
) -> None:
    for frame in ["{not json", "[1, 2]", b"\x00\x01", json.dumps({"context_id": 7})]:
        raw_ws.send(frame)
        error = _recv(raw_ws)
        assert error["type"] == "error" and error["context_id"] is None
        assert error["error_code"] == "invalid_request" and error["status_code"] == 400


def test_a_full_server_answers_concurrency_limited(
    server_factory: Callable[..., contextlib.AbstractContextManager[str]],
) -> None:
    with (
        server_factory(workers=1, max_streams=1) as url,
        connect(_ws_url(url), max_size=None) as ws,
    ):
        request = {"voice": VOICE, "output_format": S16_24K, "continue": True}
        _send(ws, context_id="first", transcript=LONG, **request)
        _send(ws, context_id="second", transcript="Hello.", **request)
        error = _recv(ws)
        while error["type"] != "error":
            error = _recv(ws)
        assert error["context_id"] == "second" and error["error_code"] == "concurrency_limited"
        assert error["status_code"] == 429
        _send(ws, context_id="first", cancel=True)
        # The slot is free again once the first context is cancelled.
        _send(ws, context_id="second", transcript="Hello.", voice=VOICE, output_format=S16_24K)
        messages = _until_done(ws, "second")
        assert messages[-1]["type"] == "done" and _audio(messages, "second")
        assert ("done", "first") not in [(m["type"], m["context_id"]) for m in messages]
