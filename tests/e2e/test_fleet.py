"""The fleet of docs/deploy.md on this machine: two ``voxflow serve`` processes behind a real
nginx (Debian's, which ``make fleet-tools`` installs) proxying with the very settings the
deployment ships (``deploy/nginx/voxflow-proxy.conf``).

HTTP speech requests and native WebSocket streams through nginx reach both replicas; SIGTERM to
one replica while a stream runs on it: new sessions go to the other with no failed request (a
request or handshake that nginx still sends to the draining replica gets its 503 and is sent on
to the other), and the stream on the stopped replica ends with the drain message
(``shutting_down``, close 1012), which nginx passes through. With a shared phrase cache in a real
Redis, a phrase rendered through one replica is a Redis hit on the other.

nginx runs ``deploy/nginx/nginx.conf`` itself, its replicas moved to this machine's ports. With
replicas that admit one stream each: a call that every replica refuses reaches the client as a
replica's own 429 with Retry-After (an HTTP request and a WebSocket handshake alike), never a
502; a full replica is skipped, and serves the next call as soon as it is free again (a 429 takes
no replica out of the rotation); a draining replica beside a full one still gives 429, and with
every replica draining the client gets their 503."""

from __future__ import annotations

import contextlib
import getpass
import json
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import ClientConnection, connect

from tests.support.redis_server import redis_server
from tests.support.serve_process import serve_processes
from tests.support.servers import free_port

REPO = Path(__file__).resolve().parents[2]
NGINX_CONF = REPO / "deploy" / "nginx" / "nginx.conf"
PROXY_CONF = REPO / "deploy" / "nginx" / "voxflow-proxy.conf"
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
# The test's nginx names the replica(s) it tried for each answer it passes on: "127.0.0.1:P";
# "127.0.0.1:P1, 127.0.0.1:P2" when the first one refused; a " : " before the tries of a
# retry location (voxflow-proxy.conf's @voxflow_full). nginx's own answers have no such header.
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


def _replace(text: str, old: str, new: str) -> str:
    assert old in text, f"{old!r} is no longer in {NGINX_CONF}"
    return text.replace(old, new)


def nginx_config(prefix: Path, port: int, replicas: Sequence[int]) -> str:
    """deploy/nginx/nginx.conf as Compose runs it, but with its replicas (``voxflow-N:8000``)
    on ``replicas``' ports here, listening on ``port``, every file under ``prefix``, and each
    answer naming the replicas nginx tried."""
    config = NGINX_CONF.read_text()
    named = {int(n) for n in re.findall(r"\bvoxflow-(\d+):8000\b", config)}
    assert named == set(range(1, len(replicas) + 1)), named
    config = re.sub(
        r"\bvoxflow-(\d+):8000\b",
        lambda match: f"127.0.0.1:{replicas[int(match.group(1)) - 1]}",
        config,
    )
    config = _replace(config, "listen 8080;", f"listen 127.0.0.1:{port};")
    config = _replace(
        config,
        "include /etc/nginx/voxflow-proxy.conf;",
        f"add_header {UPSTREAM} $upstream_addr always;\n        include {PROXY_CONF};",
    )
    temp = "".join(
        f"    {kind}_temp_path {prefix / kind};\n"
        for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    config = _replace(config, "http {\n", "http {\n" + temp)
    return (
        f"user {getpass.getuser()};\npid {prefix / 'nginx.pid'};\nerror_log stderr warn;\n{config}"
    )


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
def fleet(
    tmp_path: Path, replica_args: Sequence[str] = (), replica_env: Mapping[str, str] | None = None
) -> Iterator[Fleet]:
    """Two ``voxflow serve`` replicas (one synthesis worker each: two cores for two
    processes) and nginx in front of them; ``replica_env`` over the variables below."""
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
        **(replica_env or {}),
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


def _readiness(replica: Replica) -> str:
    """``/readyz``'s status: ready, saturated (a new stream would be refused), draining...;
    "gone" once the replica no longer listens (its drain over)."""
    try:
        with urllib.request.urlopen(f"http://{replica.address}/readyz", timeout=5) as answer:
            return str(json.load(answer)["status"])
    except urllib.error.HTTPError as error:
        with error:
            return str(json.load(error)["status"])
    except OSError:  # refused, or cut off as the listener closes
        return "unreachable" if replica.process.poll() is None else "gone"


@contextlib.contextmanager
def _full(replica: Replica) -> Iterator[None]:
    """``replica``, which admits one stream, kept full: a native stream on it, straight to its
    port, whose context stays open (flushed, never ended). Free again once left."""
    with connect(f"ws://{replica.address}/v1/stream") as ws:
        _start(ws, SHORT, end=False)
        _frames(ws, lambda f: f["type"] == "audio")  # admitted
        _until(lambda: _readiness(replica) != "ready", "the replica did not fill up")
        yield
    _until(lambda: _readiness(replica) in ("ready", "draining", "gone"), "it stayed full")


def _free(replica: Replica) -> None:
    """Wait until ``replica`` would admit a stream: a call it served may hold its one slot for a
    moment after the answer (until the server has seen the end of it)."""
    _until(lambda: _readiness(replica) == "ready", "the replica stayed full")


def _tried(upstream: str) -> list[str]:
    """The replicas an answer's header names, in the order nginx tried them."""
    return re.split(r", | : ", upstream) if upstream else []


@dataclass
class Answer:
    """What the client got: the status (101: the WebSocket opened), headers and body."""

    status: int
    headers: Mapping[str, str]
    body: bytes

    @property
    def served_by(self) -> str:
        """The replica that answered (the last one nginx tried)."""
        return _tried(self.headers.get(UPSTREAM, ""))[-1]

    def error(self) -> dict[str, object]:
        """The refusal's JSON body, after the checks every refusal passes: JSON, a Retry-After
        of whole seconds where the protocol sends one."""
        assert self.headers["content-type"].startswith("application/json"), self.headers
        body = json.loads(self.body)
        assert isinstance(body, dict), body
        return body


# The one WebSocket that a full replica refuses at its handshake (429); the others open and
# refuse the stream on the socket, past where nginx could send it elsewhere.
DEEPGRAM = "/v1/speak"


def _post(client: httpx.Client, port: int) -> Answer:
    """``_speech``'s request, its answer whole."""
    response = client.post(
        f"http://127.0.0.1:{port}/v1/audio/speech",
        json={"model": "tts-1", "voice": "alloy", "input": SHORT, "response_format": "pcm"},
    )
    return Answer(response.status_code, response.headers, response.content)


def _handshake(port: int, path: str) -> Answer:
    """A WebSocket handshake through nginx: opened (101; Deepgram's first message read, then
    closed) or refused."""
    try:
        with connect(f"ws://127.0.0.1:{port}{path}") as ws:
            assert ws.response is not None
            if path == DEEPGRAM:  # the socket works, whichever location passed it on
                assert json.loads(ws.recv(timeout=SETTLE_S))["type"] == "Metadata"
            return Answer(101, ws.response.headers, b"")
    except InvalidStatus as refused:
        response = refused.response
        return Answer(response.status_code, response.headers, bytes(response.body))


def _assert_full(answer: Answer, shape: str | None = None) -> None:
    """429 with Retry-After and a JSON error that says "full": a replica's own, in the shape of
    its protocol ("openai", "deepgram"), or nginx's when none is named (``shape``: the one
    expected; None: either)."""
    assert answer.status == 429, answer
    assert int(answer.headers["retry-after"]) >= 1
    body = answer.error()
    own = UPSTREAM in answer.headers
    if shape is not None:
        assert own, answer  # passed on from a replica
    if not own:  # voxflow-proxy.conf's @voxflow_saturated
        assert body["error"]["code"] == "concurrency_limited", body  # type: ignore[index]
    elif "err_code" in body:  # Deepgram's REST error object
        assert shape in (None, "deepgram") and body["err_code"] == "TOO_MANY_REQUESTS", body
    else:
        assert shape in (None, "openai"), body
        assert body["error"]["type"] == "rate_limit_error", body  # type: ignore[index]
        assert body["error"]["code"] == "concurrency_limited", body  # type: ignore[index]


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


# Each replica admits one stream, so one held stream fills it; the drain outlasts the test.
ONE_STREAM = {"VOXFLOW_MAX_STREAMS": "1", "VOXFLOW_DRAIN_S": "60"}


def test_a_call_every_replica_refuses_gets_their_429_with_retry_after_never_502(
    tmp_path: Path,
) -> None:
    with (
        fleet(tmp_path, replica_env=ONE_STREAM) as served,
        httpx.Client(timeout=SETTLE_S) as client,
    ):
        first, second = served.replicas
        both = {first.address, second.address}
        with _full(first):
            with _full(second):
                # Refused by one, sent to the other, refused there too: the last one's own 429.
                for _ in range(2):
                    answer = _post(client, served.port)
                    _assert_full(answer, "openai")
                    assert set(_tried(answer.headers[UPSTREAM])) == both, answer
                    refused = _handshake(served.port, DEEPGRAM)
                    _assert_full(refused, "deepgram")
                    assert refused.headers["dg-error"], refused
            # Both were refused a moment ago; the one free now takes the next calls (a 429 took
            # no replica out for fail_timeout: nginx would have had none left, a 502).
            for _ in range(2):
                answer = _post(client, served.port)
                assert (answer.status, answer.served_by) == (200, second.address), answer
                assert answer.body
                _free(second)
                opened = _handshake(served.port, DEEPGRAM)
                assert (opened.status, opened.served_by) == (101, second.address), opened
                _free(second)


def test_a_full_replica_is_skipped_and_serves_again_once_free(tmp_path: Path) -> None:
    with (
        fleet(tmp_path, replica_env=ONE_STREAM) as served,
        httpx.Client(timeout=SETTLE_S) as client,
    ):
        first, second = served.replicas
        with _full(first):
            # Twice each, so that nginx picks the full replica first at least once.
            answers, handshakes = [], []
            for _ in range(2):
                answers.append(_post(client, served.port))
                _free(second)
            for _ in range(2):
                handshakes.append(_handshake(served.port, DEEPGRAM))
                _free(second)
            for answer in answers + handshakes:
                assert answer.status in (200, 101) and answer.served_by == second.address, answer
            # nginx takes turns: one of each pair went to the full one first and, refused
            # there, on to the other (the POST's body sent again).
            for pair in (answers, handshakes):
                tried = [_tried(a.headers[UPSTREAM]) for a in pair]
                assert any(t[0] == first.address for t in tried), tried
        # The replica that refused just now is free: with the other full, it serves.
        with _full(second):
            answer = _post(client, served.port)
            assert (answer.status, answer.served_by) == (200, first.address), answer


def test_draining_and_full_replicas_give_429_and_all_draining_503(tmp_path: Path) -> None:
    with (
        fleet(tmp_path, replica_env=ONE_STREAM) as served,
        httpx.Client(timeout=SETTLE_S) as client,
    ):
        first, second = served.replicas
        with _full(first), _full(second):
            first.process.send_signal(signal.SIGTERM)
            _until(lambda: _readiness(first) == "draining", "the replica did not start its drain")
            # One leaving, one full: "full, retry" (the full one's 429 or nginx's own, by the
            # order nginx tried them in), never the draining one's 503 or a 502.
            for _ in range(2):
                _assert_full(_post(client, served.port))
                _assert_full(_handshake(served.port, DEEPGRAM))
            second.process.send_signal(signal.SIGTERM)
            _until(lambda: _readiness(second) == "draining", "the replica did not start its drain")
            # Both leaving: their own 503 (shutting_down), HTTP and every WebSocket handshake.
            paths = [DEEPGRAM, "/v1/stream", "/v1/text-to-speech/alloy/stream-input"]
            answers = [_post(client, served.port) for _ in range(2)]
            answers += [_handshake(served.port, path) for path in [*paths, "/tts/websocket"]]
            for answer in answers:
                assert answer.status == 503 and UPSTREAM in answer.headers, answer
                assert "shutting_down" in json.dumps(answer.error()).lower(), answer
