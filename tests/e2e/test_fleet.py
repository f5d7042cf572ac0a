"""The fleet of docs/deploy.md on this machine: two ``voxflow serve`` processes behind a real
nginx (Debian's, which ``make fleet-tools`` installs) proxying with the very settings the
deployment ships (``deploy/nginx/voxflow-proxy.conf``).

HTTP speech requests and native WebSocket streams through nginx reach both replicas; SIGTERM to
one replica while a stream runs on it: new sessions go to the other with no failed request (a
request or handshake that nginx still sends to the draining replica gets its 503 and is sent on
to the other), and the stream on the stopped replica ends with the drain message
(``shutting_down``, close 1012), which nginx passes through. With a shared phrase cache in a real
Redis, a phrase rendered through one replica is a Redis hit on the other."""

from __future__ import annotations

import contextlib
import getpass
import json
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from tests.support.redis_server import redis_server
from tests.support.serve_process import serve_processes
from tests.support.servers import free_port

REPO = Path(__file__).resolve().parents[2]
PROXY_CONF = REPO / "deploy" / "nginx" / "voxflow-proxy.conf"
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
# The test's nginx names the replica(s) it tried for each answer: "127.0.0.1:P" or, when the
# first one refused, "127.0.0.1:P1, 127.0.0.1:P2".
UPSTREAM = "x-voxflow-upstream"
DRAIN_S = 3.0
SETTLE_S = 60.0  # a bound against a hang, far above what any step needs on a busy machine
# Minutes of speech: it outlasts the drain whatever the machine's pace.
LONG = (
    "The quick brown fox jumps over the lazy dog while the orchestra, tuning its instruments "
    "in the distance, prepares for a long evening of music that nobody will forget. "
) * 20
SHORT = "Hello there, how can I help you today?"


def _installed(program: str, package: str) -> None:
    if not Path(program).exists():
        pytest.fail(
            f"{program} is not installed: the fleet tests need Debian's {package} "
            f"(`apt-get install -y --no-install-recommends {package}`; `make test` installs it)",
            pytrace=False,
        )


def _until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + SETTLE_S
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def _accepts(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
    process.wait(30)


def nginx_config(prefix: Path, port: int, replicas: Sequence[int]) -> str:
    """A whole nginx configuration: this test's upstreams and paths around the deployment's
    proxy settings, run as the current user with everything under ``prefix``."""
    servers = "\n".join(
        f"        server 127.0.0.1:{replica} max_fails=1 fail_timeout=30s;" for replica in replicas
    )
    temp = "\n".join(
        f"    {kind}_temp_path {prefix / kind};"
        for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    return f"""
user {getpass.getuser()};
worker_processes 1;
pid {prefix / "nginx.pid"};
error_log stderr warn;
events {{ worker_connections 256; }}
http {{
    access_log off;
{temp}
    map $http_upgrade $connection_upgrade {{
        default upgrade;
        ""      "";
    }}
    upstream voxflow {{
{servers}
        keepalive 8;
    }}
    server {{
        listen 127.0.0.1:{port};
        location / {{
            include {PROXY_CONF};
            add_header {UPSTREAM} $upstream_addr always;
        }}
    }}
}}
"""


@contextlib.contextmanager
def nginx(prefix: Path, replicas: Sequence[int]) -> Iterator[int]:
    """Debian's nginx in the foreground, proxying to ``replicas``; its port."""
    _installed(NGINX, "nginx")
    prefix.mkdir()
    port = free_port()
    config = prefix / "nginx.conf"
    config.write_text(nginx_config(prefix, port, replicas))
    with (prefix / "error.log").open("wb") as log:
        process = subprocess.Popen(
            [NGINX, "-p", str(prefix), "-c", str(config), "-g", "daemon off;"],
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
        try:
            _until(lambda: process.poll() is not None or _accepts(port), "nginx did not listen")
            assert process.poll() is None, (prefix / "error.log").read_text()
            yield port
        finally:
            _stop(process)


@dataclass
class Replica:
    process: subprocess.Popen[bytes]
    port: int

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"


@dataclass
class Fleet:
    replicas: list[Replica]
    port: int  # nginx's

    def replica(self, address: str) -> Replica:
        return next(r for r in self.replicas if r.address == address)


@contextlib.contextmanager
def fleet(tmp_path: Path, replica_args: Sequence[str] = ()) -> Iterator[Fleet]:
    """Two ``voxflow serve`` replicas (one synthesis worker each: two cores for two
    processes) and nginx in front of them."""
    env = {
        "VOXFLOW_DRAIN_S": str(DRAIN_S),
        # Room for every stream of the tests on one replica (the default cap is 1 per worker).
        "VOXFLOW_MAX_STREAMS": "8",
        # No refusal by cost: these tests are about routing. With one worker, a whole-text
        # request takes the whole capacity, and a native session that has just ended still
        # counts until the server has seen its connection close: an HTTP request right after
        # one was refused (429), and nginx, which had marked the draining replica failed, had
        # nowhere else to send it.
        "VOXFLOW_MAX_LOAD": "0",
    }
    args = ["--workers", "1", *replica_args]
    with serve_processes(2, env, args) as served:
        replicas = [Replica(*process_and_port) for process_and_port in served]
        with nginx(tmp_path / "nginx", [r.port for r in replicas]) as port:
            yield Fleet(replicas, port)


# -- clients ------------------------------------------------------------------------------


def _speech(client: httpx.Client, port: int) -> tuple[int, str, int]:
    """An OpenAI speech request through nginx: status, the upstreams tried, audio bytes."""
    response = client.post(
        f"http://127.0.0.1:{port}/v1/audio/speech",
        json={"model": "tts-1", "voice": "alloy", "input": SHORT, "response_format": "pcm"},
    )
    return response.status_code, response.headers.get(UPSTREAM, ""), len(response.content)


def _upstream(ws: ClientConnection) -> str:
    assert ws.response is not None
    return str(ws.response.headers[UPSTREAM])


def _start(ws: ClientConnection, text: str, end: bool) -> None:
    ws.send(json.dumps({"type": "start", "context_id": "a", "output_format": "pcm_16000"}))
    ws.send(json.dumps({"type": "text", "context_id": "a", "text": text}))
    ws.send(json.dumps({"type": "end" if end else "flush", "context_id": "a"}))


def _frames(ws: ClientConnection, until: Callable[[dict[str, object]], bool]) -> list[dict]:
    """Text frames up to the first one ``until`` accepts (a closed connection fails)."""
    frames = []
    while True:
        frame = ws.recv(timeout=SETTLE_S)
        if isinstance(frame, str):
            frames.append(json.loads(frame))
            if until(frames[-1]):
                return frames


def _frames_until_closed(ws: ClientConnection) -> list[dict[str, object]]:
    frames = []
    with pytest.raises(ConnectionClosed):
        while True:
            frame = ws.recv(timeout=SETTLE_S)
            if isinstance(frame, str):
                frames.append(json.loads(frame))
    return frames


def _session(port: int) -> str:
    """A native WebSocket reply through nginx, spoken to its ``done``; the replica it ran on."""
    with connect(f"ws://127.0.0.1:{port}/v1/stream") as ws:
        _start(ws, SHORT, end=True)
        frames = _frames(ws, lambda f: f["type"] in ("done", "error"))
        assert frames[-1]["type"] == "done", frames[-1]
        assert any(f["type"] == "audio" for f in frames)
        return _upstream(ws)


def _ready(replica: Replica) -> int:
    try:
        with urllib.request.urlopen(f"http://{replica.address}/readyz", timeout=5) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as error:
        return int(error.code)


# -- the tests ----------------------------------------------------------------------------


def test_http_and_websocket_sessions_through_nginx_reach_both_replicas(tmp_path: Path) -> None:
    with fleet(tmp_path) as served, httpx.Client(timeout=SETTLE_S) as client:
        both = {r.address for r in served.replicas}
        answers = [_speech(client, served.port) for _ in range(4)]
        assert all(status == 200 and size > 0 for status, _, size in answers), answers
        assert {upstream for _, upstream, _ in answers} == both
        assert {_session(served.port) for _ in range(4)} == both


def test_sigterm_to_one_replica_moves_new_sessions_to_the_other(tmp_path: Path) -> None:
    with fleet(tmp_path) as served, httpx.Client(timeout=SETTLE_S) as client:
        with connect(f"ws://127.0.0.1:{served.port}/v1/stream") as long:
            _start(long, LONG, end=False)
            _frames(long, lambda f: f["type"] == "audio")  # speaking
            stopped = served.replica(_upstream(long))
            other = next(r for r in served.replicas if r is not stopped)
            stopped.process.send_signal(signal.SIGTERM)
            _until(lambda: _ready(stopped) == 503, "the replica did not start its drain")

            # New WebSocket sessions go to the other replica, spoken to their end. nginx
            # sends the first it picks for the stopped one there: its handshake is refused
            # with 503 before any work, nginx marks the replica failed and sends the
            # handshake on (an accepted socket would have been a failed session).
            tried = [_session(served.port).split(", ") for _ in range(2)]
            assert all(addresses[-1] == other.address for addresses in tried), tried
            assert [stopped.address, other.address] in tried, tried
            # New HTTP requests all succeed on the other replica too.
            answers = [_speech(client, served.port) for _ in range(2)]
            assert all(status == 200 and size > 0 for status, _, size in answers), answers
            assert {upstream.split(", ")[-1] for _, upstream, _ in answers} == {other.address}

            # The stream on the stopped replica outlasts the drain: it ends with the drain
            # message, passed through by nginx.
            frames = _frames_until_closed(long)
            assert (frames[-1]["type"], frames[-1]["code"]) == ("error", "shutting_down")
            assert long.close_code == 1012
        assert stopped.process.wait(timeout=SETTLE_S) in (0, -signal.SIGTERM)
        # Gone altogether: nginx still answers every request from the other replica.
        status, upstream, size = _speech(client, served.port)
        assert (status, upstream.split(", ")[-1]) == (200, other.address) and size > 0


def _metric(address: str, name: str) -> float:
    with urllib.request.urlopen(f"http://{address}/metrics", timeout=10) as answer:
        text = answer.read().decode()
    values = [float(line.split()[-1]) for line in text.splitlines() if line.startswith(name)]
    assert values, f"{name} not in {address}/metrics"
    return values[0]


def test_a_phrase_rendered_through_one_replica_is_a_redis_hit_on_the_other(
    tmp_path: Path,
) -> None:
    with (
        redis_server(tmp_path) as redis,
        fleet(tmp_path, replica_args=("--cache-url", redis.url)) as served,
        httpx.Client(timeout=SETTLE_S) as client,
    ):
        first, second = served.replicas
        # Prefetched through nginx (whichever replica it lands on), then asked of each replica.
        answer = client.post(
            f"http://127.0.0.1:{served.port}/v1/cache/prefetch", json={"text": SHORT, "wait": True}
        )
        assert answer.status_code == 200, answer.text
        rendered_on = served.replica(answer.headers[UPSTREAM].split(", ")[-1])
        other = second if rendered_on is first else first
        _until(
            lambda: _metric(rendered_on.address, "voxflow_cache_shared_writes_total") >= 1,
            "the phrase did not reach Redis",
        )
        heard = []
        for replica in (rendered_on, other):
            response = client.post(
                f"http://{replica.address}/v1/audio/speech",
                json={"model": "tts-1", "voice": "alloy", "input": SHORT, "response_format": "pcm"},
            )
            assert response.status_code == 200
            heard.append(response.content)
        # No seed: a rendering of its own would draw other noise; both are the one prefetched.
        assert heard[0] == heard[1]
        assert _metric(other.address, 'voxflow_cache_hits_total{tier="shared"}') >= 1
        assert _metric(rendered_on.address, 'voxflow_cache_hits_total{tier="memory"}') >= 1
