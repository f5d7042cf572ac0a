from __future__ import annotations

import base64
import io
import json
import socket
import threading
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import av
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

LONG = (
    "The quick brown fox jumps over the lazy dog while the orchestra, tuning its instruments "
    "in the distance, prepares for a long evening of music that nobody will forget. "
)


def _ws_url(server_url: str, query: str = "") -> str:
    return server_url.replace("http://", "ws://") + "/v1/stream" + query


@pytest.fixture
def ws(server_url: str) -> Iterator[ClientConnection]:
    with connect(_ws_url(server_url), max_size=None) as connection:
        yield connection


def _send(ws: ClientConnection, **message: Any) -> None:
    ws.send(json.dumps(message))


def _recv(ws: ClientConnection, timeout: float = 30) -> dict[str, Any]:
    message = json.loads(ws.recv(timeout=timeout))
    assert isinstance(message, dict)
    return message


def _until(ws: ClientConnection, kind: str, context_id: str | None = None) -> list[dict[str, Any]]:
    """All messages up to and including the first of ``kind`` (for ``context_id`` if given)."""
    seen = []
    while True:
        message = _recv(ws)
        seen.append(message)
        if message["type"] == kind and context_id in (None, message.get("context_id")):
            return seen


def test_a_context_streams_timestamps_audio_and_done(ws: ClientConnection) -> None:
    text = "Hello there, how are you doing today? I hope all is well."
    _send(ws, type="start", context_id="a", output_format="pcm_16000", seed=3)
    _send(ws, type="text", context_id="a", text=text)
    _send(ws, type="end", context_id="a")
    messages = _until(ws, "done", "a")
    assert {m["context_id"] for m in messages} == {"a"}
    audio = [m for m in messages if m["type"] == "audio"]
    assert [m["seq"] for m in audio] == list(range(len(audio)))
    assert len(audio) >= 3  # windows, not one chunk per sentence
    offset = 0.0
    for chunk in audio:
        assert chunk["offset_ms"] == pytest.approx(offset, abs=0.01)
        samples = len(base64.b64decode(chunk["audio"])) // 2
        assert chunk["duration_ms"] == pytest.approx(samples / 16, abs=0.01)
        offset += chunk["duration_ms"]
    words = [w for m in messages if m["type"] == "timestamps" for w in m["words"]]
    assert [w["word"] for w in words][:3] == ["Hello", "there", "how"]
    for word in words:
        assert text[word["char_start"] : word["char_end"]] == word["word"]
    assert messages.index(next(m for m in messages if m["type"] == "timestamps")) == 0
    done = messages[-1]["metrics"]
    assert done["chunks"] == len(audio)
    assert done["audio_ms"] == pytest.approx(offset, abs=0.1)
    assert 0 < done["ttfa_ms"] < done["audio_ms"]
    assert done["rtf"] > 0


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        ("{not json", "invalid_json"),
        ("[1, 2]", "invalid_message"),
        (json.dumps({"type": "sing"}), "unknown_type"),
        (json.dumps({"type": "text", "text": 5}), "invalid_message"),
        (json.dumps({"type": "start", "context_id": "v", "voice": "nobody"}), "unknown_voice"),
        (
            json.dumps({"type": "start", "context_id": "f", "output_format": "mp3_44100_999"}),
            "unsupported_format",
        ),
        (json.dumps({"type": "start", "context_id": "s", "speed": 10}), "invalid_message"),
        (
            json.dumps({"type": "start", "context_id": "n", "apply_text_normalization": "x"}),
            "invalid_message",
        ),
        (
            json.dumps({"type": "start", "context_id": "l", "lexicon": [{"word": "a b"}]}),
            "invalid_message",
        ),
        (json.dumps({"type": "text", "context_id": "t", "text": "x" * 10_001}), "text_too_long"),
        (json.dumps({"type": "flush", "context_id": "nobody"}), "unknown_context"),
        (json.dumps({"type": "cancel", "context_id": "c", "played_ms": "soon"}), "invalid_message"),
    ],
)
def test_bad_messages_get_errors_and_the_connection_stays_usable(
    ws: ClientConnection, raw: str, code: str
) -> None:
    ws.send(raw)
    error = _recv(ws)
    assert error["type"] == "error" and error["code"] == code
    assert error["message"] and error["retryable"] is False
    _send(ws, type="text", context_id="ok", text="Still fine.")
    _send(ws, type="end", context_id="ok")
    assert _until(ws, "done", "ok")[-1]["metrics"]["audio_ms"] > 0


def test_contexts_run_concurrently_on_one_connection(ws: ClientConnection) -> None:
    for cid in ("x", "y"):
        _send(ws, type="text", context_id=cid, text=LONG)
    for cid in ("x", "y"):
        _send(ws, type="end", context_id=cid)
    first_audio: dict[str, int] = {}
    done: set[str] = set()
    index = 0
    while done != {"x", "y"}:
        message = _recv(ws)
        index += 1
        if message["type"] == "audio":
            first_audio.setdefault(message["context_id"], index)
        if message["type"] == "done":
            done.add(message["context_id"])
    # Both started before either finished: the second context did not wait for the first.
    assert max(first_audio.values()) < 40


def test_cancel_stops_audio_and_reports_spoken_text(ws: ClientConnection) -> None:
    _send(ws, type="text", context_id="c", text=LONG * 2)
    _send(ws, type="flush", context_id="c")
    heard = 0.0
    words: list[dict[str, Any]] = []
    while heard < 1500:
        message = _recv(ws)
        if message["type"] == "audio":
            heard += message["duration_ms"]
        elif message["type"] == "timestamps":
            words.extend(message["words"])
    _send(ws, type="cancel", context_id="c", played_ms=1200)
    messages = _until(ws, "cancelled", "c")
    cancelled = messages[-1]
    assert cancelled["played_ms"] == 1200
    spoken = cancelled["spoken_text"]
    assert LONG.startswith(spoken) and spoken
    last_heard = [w for w in words if w["end_ms"] <= 1200][-1]
    assert spoken.endswith(last_heard["word"])
    # Nothing of "c" may follow `cancelled`; a fresh context proves the socket is still live.
    _send(ws, type="text", context_id="after", text="Next.")
    _send(ws, type="end", context_id="after")
    trailing = _until(ws, "done", "after")
    assert not [m for m in trailing if m.get("context_id") == "c"]


def test_binary_audio_mode(server_url: str) -> None:
    with connect(_ws_url(server_url, "?audio=binary")) as ws:
        _send(ws, type="start", output_format="ulaw_8000")
        _send(ws, type="text", text="Binary frames, please.")
        _send(ws, type="end")
        total = 0.0
        while True:
            header = _recv(ws)
            if header["type"] == "done":
                break
            if header["type"] == "audio":
                assert "audio" not in header
                payload = ws.recv(timeout=30)
                assert isinstance(payload, bytes) and len(payload) == header["bytes"]
                assert header["duration_ms"] == pytest.approx(len(payload) / 8, abs=0.01)
                total += header["duration_ms"]
        assert header["metrics"]["audio_ms"] == pytest.approx(total, abs=0.1)


def _metric(server_url: str, name: str) -> float:
    with urllib.request.urlopen(server_url + "/metrics", timeout=10) as response:
        for line in response.read().decode().splitlines():
            if line.startswith(name + " ") or line.startswith(name + "_total "):
                return float(line.split()[1])
    raise AssertionError(f"metric {name} not found")


def test_a_disconnected_clients_work_stops(server_url: str) -> None:
    with connect(_ws_url(server_url)) as ws:
        _send(ws, type="text", text=LONG * 3)
        _send(ws, type="flush")
        assert _until(ws, "audio")
    deadline = time.monotonic() + 10
    while _metric(server_url, "voxflow_active_contexts") > 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _metric(server_url, "voxflow_active_contexts") == 0
    assert _metric(server_url, "voxflow_queue_depth") == 0
    # The window in flight at disconnect may finish (and be discarded); nothing after it runs.
    while _metric(server_url, "voxflow_busy_workers") > 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    jobs = _metric(server_url, "voxflow_jobs")
    time.sleep(0.5)
    assert _metric(server_url, "voxflow_jobs") == jobs  # nothing more was rendered for it


def test_a_client_that_stops_reading_is_closed(server_factory: Any) -> None:
    # No lead cap: render far ahead, so what is rendered soon exceeds every buffer between the
    # server and a client that reads nothing (LONG * 24 is ~200 s of audio, ~25 MB as base64
    # PCM at 48 kHz; the kernel and the client library together hold a few MB).
    with server_factory(outbound_bytes=64 << 10, write_timeout_s=0.5, max_lead_s=600.0) as url:
        sock = socket.socket()
        # A tiny receive window makes the server's sends block once a few chunks are in flight.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        host, port = url.removeprefix("http://").split(":")
        sock.connect((host, int(port)))
        # max_queue: the client library stops reading the socket once 2 frames wait unread.
        with connect(_ws_url(url), sock=sock, max_size=None, max_queue=2) as ws:
            _send(ws, type="start", output_format="pcm_48000")
            _send(ws, type="text", text=LONG * 24)
            _send(ws, type="flush")
            assert json.loads(ws.recv(timeout=30))["type"] in ("timestamps", "audio")  # open
            # The server stops the stalled client's work: no waiting on a clock.
            deadline = time.monotonic() + 120
            while _metric(url, "voxflow_active_contexts") > 0 and time.monotonic() < deadline:
                time.sleep(0.1)
            assert _metric(url, "voxflow_active_contexts") == 0
            with pytest.raises(ConnectionClosed):
                while True:  # drain what was buffered, then meet the close
                    ws.recv(timeout=30)
            assert ws.close_code in (1008, 1006)


def test_threads_and_contexts_return_to_baseline_after_many_sessions(server_url: str) -> None:
    with connect(_ws_url(server_url)) as ws:  # warm: the server's own threads exist now
        _send(ws, type="text", text="Warm up.")
        _send(ws, type="end")
        _until(ws, "done")
    baseline = threading.active_count()
    for round_ in range(12):
        with connect(_ws_url(server_url)) as ws:
            _send(ws, type="text", context_id="a", text="One more session. ")
            _send(ws, type="text", context_id="b", text=LONG)
            _send(ws, type="flush", context_id="b")
            _send(ws, type="end", context_id="a")
            _until(ws, "done", "a")
            if round_ % 2:
                _send(ws, type="cancel", context_id="b")
                _until(ws, "cancelled", "b")
            # Otherwise leave "b" running and just disconnect.
    deadline = time.monotonic() + 10
    while _metric(server_url, "voxflow_active_contexts") > 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _metric(server_url, "voxflow_active_contexts") == 0
    assert threading.active_count() == baseline


@pytest.mark.parametrize("output_format", ["mp3_44100_128", "opus_48000_64", "flac_24000"])
def test_compressed_formats_decode_to_the_reported_duration(
    ws: ClientConnection, output_format: str
) -> None:
    _send(ws, type="start", context_id="z", output_format=output_format, seed=2)
    _send(ws, type="text", context_id="z", text="Compressed, and still on time. Twice over.")
    _send(ws, type="end", context_id="z")
    messages = _until(ws, "done", "z")
    data = b"".join(base64.b64decode(m["audio"]) for m in messages if m["type"] == "audio")
    reported_ms = messages[-1]["metrics"]["audio_ms"]
    assert reported_ms == pytest.approx(
        sum(m["duration_ms"] for m in messages if m["type"] == "audio"), abs=0.1
    )
    with av.open(io.BytesIO(data)) as container:
        decoded_ms = 1000 * sum(
            frame.samples / frame.sample_rate for frame in container.decode(audio=0)
        )
    # duration_ms counts what a decoder plays, codec priming and padding included.
    assert decoded_ms == pytest.approx(reported_ms, abs=30)
    words = [w for m in messages if m["type"] == "timestamps" for w in m["words"]]
    assert words[-1]["end_ms"] <= reported_ms
