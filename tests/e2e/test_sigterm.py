"""SIGTERM with live streams and a client that stopped reading: ``voxflow serve`` closes the live
stream gracefully and exits within its drain time (a real process, a real signal)."""

from __future__ import annotations

import http.client
import json
import signal
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import ClientConnection, connect

from tests.support.serve_process import serve_process
from tests.support.traffic import SLOW_TEXT

# Twenty different sentences (one said twenty times would be phrase cache hits from its third
# time on, rendered at once): the streams are still rendering when the drain ends.
LONG = SLOW_TEXT
DRAIN_S = 2.0


@pytest.fixture
def server() -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    env = {
        "VOXFLOW_DRAIN_S": str(DRAIN_S),
        # Render far ahead, and never close a stalled client by itself: the stuck client below
        # keeps a send blocked until the drain cuts it off.
        "VOXFLOW_MAX_LEAD_S": "600",
        "VOXFLOW_WRITE_TIMEOUT_S": "600",
        # Room for every stream below at once (the default cap is 1 per synthesis worker).
        "VOXFLOW_MAX_STREAMS": "16",
        # The streams and the HTTP answer below speak the same sentences: with the phrase cache
        # the later ones are hits, the live stream gets the cores to itself and fills its
        # client's buffers before the drain ends (1 run in 5), which is not what is tested here.
        "VOXFLOW_CACHE_BYTES": "0",
    }
    with serve_process(env) as served:
        yield served


def _speak(ws: ClientConnection) -> None:
    ws.send(json.dumps({"type": "start", "output_format": "pcm_48000"}))
    ws.send(json.dumps({"type": "text", "text": LONG}))
    ws.send(json.dumps({"type": "flush"}))
    assert json.loads(ws.recv(timeout=30))["type"] in ("timestamps", "audio")


def _frames_until_closed(ws: ClientConnection) -> list[dict[str, object]]:
    """Every text frame until the server closes the connection."""
    frames = []
    with pytest.raises(ConnectionClosed):
        while True:
            frame = ws.recv(timeout=30)
            if isinstance(frame, str):
                frames.append(json.loads(frame))
    return frames


def _listen(ws: ClientConnection, frames: list[dict[str, object]]) -> threading.Thread:
    """A listener that reads ``ws`` as it plays, into ``frames``, until the server closes it.

    A client that reads nothing fills its buffers once the server has rendered far enough
    ahead, and then the connection's last words cannot be written: it is aborted at the drain's
    end, which is the stuck client's case, not a live one's (it failed so 1 run in 13)."""

    def listen() -> None:
        try:
            while True:
                frame = ws.recv(timeout=60)
                if isinstance(frame, str):
                    frames.append(json.loads(frame))
        except (ConnectionClosed, TimeoutError):
            return

    thread = threading.Thread(target=listen, name="live-listener", daemon=True)
    thread.start()
    return thread


def _get(port: int, path: str) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return int(error.code)


def test_sigterm_lets_a_short_stream_finish_and_refuses_new_work(
    server: tuple[subprocess.Popen[bytes], int],
) -> None:
    process, port = server
    url = f"ws://127.0.0.1:{port}/v1/stream"
    with connect(url) as finishing, connect(url) as idle:
        finishing.send(json.dumps({"type": "start", "context_id": "a"}))
        finishing.send(json.dumps({"type": "text", "context_id": "a", "text": "Just a moment."}))
        assert json.loads(finishing.recv(timeout=30))["type"] in ("timestamps", "audio")
        process.send_signal(signal.SIGTERM)
        # Draining: readiness says so once the server has taken the signal, and from then an open
        # connection may not start a new stream. The admitted stream is still open (its end comes
        # below), so the drain cannot be over yet. (With the end sent before the signal, the
        # short stream could finish first, the drain end at once and the connection close before
        # the refusal was written: 1 run in 9. A start sent before the server took the signal
        # would be admitted.)
        deadline = time.monotonic() + 30
        while _get(port, "/readyz") != 503:
            assert time.monotonic() < deadline, "/readyz never said the server was draining"
            time.sleep(0.01)
        idle.send(json.dumps({"type": "start", "context_id": "b"}))
        refused = json.loads(idle.recv(timeout=30))
        assert (refused["type"], refused["code"]) == ("error", "shutting_down")
        finishing.send(json.dumps({"type": "end", "context_id": "a"}))
        frames = _frames_until_closed(finishing)
        # The admitted stream spoke to its end within the drain time: its done came, then the
        # connection's last words.
        assert [f["type"] for f in frames].count("done") == 1
        assert frames[-1]["code"] == "shutting_down"
        assert finishing.close_code == 1012
        _frames_until_closed(idle)
        assert idle.close_code == 1012
    assert process.wait(timeout=60) in (0, -signal.SIGTERM)


def test_sigterm_exits_within_the_drain_time_with_a_stuck_client(
    server: tuple[subprocess.Popen[bytes], int],
) -> None:
    process, port = server
    url = f"ws://127.0.0.1:{port}/v1/stream"
    with socket.socket() as stuck_sock:
        stuck_sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        stuck_sock.connect(("127.0.0.1", port))
        with (
            connect(url, max_size=None) as live,
            # Reads one frame, then nothing: the library stops reading with one frame queued.
            # Its reader never sees the server go, so closing it waits out close_timeout (10 s
            # by default) for a close frame that cannot come.
            connect(url, sock=stuck_sock, max_size=None, max_queue=1, close_timeout=0.5) as stuck,
        ):
            _speak(live)
            _speak(stuck)
            # An HTTP answer too long to finish within the drain (read after the exit).
            request = urllib.request.Request(
                f"http://127.0.0.1:{port}/v1/audio/speech",
                data=json.dumps({"input": LONG * 2, "response_format": "pcm"}).encode(),
                headers={"content-type": "application/json"},
            )
            answer = urllib.request.urlopen(request, timeout=30)
            heard: list[dict[str, object]] = []
            listener = _listen(live, heard)  # the live stream is speaking, and heard
            time.sleep(2)  # the stuck stream renders far ahead and fills every buffer
            signalled = time.monotonic()
            process.send_signal(signal.SIGTERM)
            exit_code = process.wait(timeout=60)
            took = time.monotonic() - signalled
            print(f"\nexited {took:.2f} s after SIGTERM (drain {DRAIN_S} s)")
            with answer, pytest.raises(http.client.IncompleteRead):
                answer.read()  # cut, never a short body that ends like a whole one
            listener.join(30)
            assert not listener.is_alive(), "the live connection was never closed"
            last = heard[-1]
            # The stream outlasted the drain: its protocol's last words, then "service restart".
            assert last["type"] == "error" and last["code"] == "shutting_down"
            assert last["retryable"] is True
            assert live.close_code == 1012
    # uvicorn re-raises the signal once it has shut down gracefully.
    assert exit_code in (0, -signal.SIGTERM)
    # Bounded by the drain time plus the final message and teardown bounds, with room for a busy
    # machine (the figure is measured in docs/reliability.md, not asserted here); without the
    # bounds the process never exits while the stuck client holds its connection.
    assert took < DRAIN_S + 20


# Each WebSocket protocol's path and how its refusal body names the code.
DRAINING_REFUSALS: dict[str, Callable[[Any], bool]] = {
    "/v1/stream": lambda body: body["error"]["code"] == "shutting_down",
    "/v1/text-to-speech/joe/stream-input": lambda body: body["detail"]["status"] == "shutting_down",
    "/tts/websocket": lambda body: body["error_code"] == "shutting_down",
}


def test_a_handshake_while_draining_is_refused_with_503_so_a_balancer_retries_elsewhere(
    server: tuple[subprocess.Popen[bytes], int],
) -> None:
    process, port = server
    with connect(f"ws://127.0.0.1:{port}/v1/stream", max_size=None) as live:
        _speak(live)  # a stream that outlasts the drain: the server drains for DRAIN_S
        process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 10
        while _get(port, "/readyz") != 503:
            assert time.monotonic() < deadline, "the server did not start draining"
            time.sleep(0.02)
        for path, names_the_code in DRAINING_REFUSALS.items():
            with pytest.raises(InvalidStatus) as refused:
                connect(f"ws://127.0.0.1:{port}{path}", open_timeout=10).close()
            response = refused.value.response
            assert response.status_code == 503, path
            assert response.headers["retry-after"] == "1", path
            assert names_the_code(json.loads(response.body)), (path, response.body)
    assert process.wait(timeout=60) in (0, -signal.SIGTERM)
