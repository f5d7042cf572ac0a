"""The phrase cache through a real server: prefetch, warming, hits on every protocol's audio, a
shared tier in a real Redis between two replicas, and Redis going away mid-run."""

from __future__ import annotations

import contextlib
import itertools
import json
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from websockets.sync.client import ClientConnection, connect

from tests.support.redis_server import RedisServer, redis_server
from tests.support.servers import TEST_MAX_STREAMS, free_port, running_server
from voxflow.config import ServerSettings
from voxflow.engines.router import EngineRouter

PHRASE = "One moment, let me check that for you."
ServerFactory = Callable[..., contextlib.AbstractContextManager[str]]


def _speech(client: httpx.Client, url: str, text: str = PHRASE) -> bytes:
    response = client.post(
        f"{url}/v1/audio/speech",
        json={"model": "tts-1", "input": text, "voice": "alloy", "response_format": "pcm"},
    )
    assert response.status_code == 200, response.text
    return response.content


def _metric(client: httpx.Client, url: str, name: str, labels: str = "") -> float:
    text = client.get(f"{url}/metrics").text
    pattern = rf"^{re.escape(name)}{re.escape('{' + labels + '}' if labels else '')} (\S+)$"
    match = re.search(pattern, text, re.MULTILINE)
    assert match is not None, f"{name}{{{labels}}} not in /metrics"
    return float(match.group(1))


def _prefetch(client: httpx.Client, url: str, **body: object) -> httpx.Response:
    return client.post(f"{url}/v1/cache/prefetch", json={"text": PHRASE, **body})


def test_a_prefetched_phrase_is_heard_from_the_cache(server_factory: ServerFactory) -> None:
    with server_factory(workers=2) as url, httpx.Client(timeout=60) as client:
        answer = _prefetch(client, url, wait=True)
        assert answer.status_code == 200, answer.text
        body = answer.json()
        assert body["segments"] >= 1
        assert all(r["status"] == "rendered" for r in body["results"])
        misses = _metric(client, url, "voxflow_cache_misses_total")  # the prefetch's own
        first, second = _speech(client, url), _speech(client, url)
        assert len(first) > 24000
        # Every engine request of both answers was a hit: nothing rendered afresh. (Not the
        # same bytes: the lead hands over to its sentence at a word the scheduler picks as the
        # hits arrive, which a busy machine moves by a word.)
        assert _metric(client, url, "voxflow_cache_misses_total") == misses
        assert _metric(client, url, "voxflow_cache_hits_total", 'tier="memory"') >= 2
        assert abs(len(first) - len(second)) < 0.1 * len(first)
        assert _metric(client, url, "voxflow_cache_ttfa_seconds_count", 'result="hit"') == 2
        assert _metric(client, url, "voxflow_cache_hit_ratio") > 0
        # Prefetching it again finds it.
        again = _prefetch(client, url, wait=True).json()
        assert all(r["status"] == "cached" for r in again["results"])


def test_without_wait_a_prefetch_is_accepted_at_once(server_factory: ServerFactory) -> None:
    with server_factory(workers=2) as url, httpx.Client(timeout=60) as client:
        answer = _prefetch(client, url)
        assert answer.status_code == 202 and answer.json()["segments"] >= 1


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"text": 5}, "invalid_message"),
        ({"text": PHRASE, "speed": 0}, "invalid_message"),
        ({"text": PHRASE, "voice": "nobody"}, "unknown_voice"),
        ({"text": PHRASE, "wait": "yes"}, "invalid_message"),
        ({"text": "x" * 20_000}, "text_too_long"),
    ],
)
def test_a_bad_prefetch_is_a_400_with_its_code(
    server_url: str, body: dict[str, object], code: str
) -> None:
    with httpx.Client(timeout=30) as client:
        answer = client.post(f"{server_url}/v1/cache/prefetch", json=body)
    assert answer.status_code == 400
    assert answer.json()["error"]["code"] == code


def test_a_prefetch_body_that_is_not_json_is_a_400(server_url: str) -> None:
    with httpx.Client(timeout=30) as client:
        answer = client.post(f"{server_url}/v1/cache/prefetch", content=b"{nope")
    assert answer.status_code == 400 and answer.json()["error"]["code"] == "invalid_json"


@pytest.fixture(scope="module")
def uncached_url(served_engine: EngineRouter) -> Iterator[str]:
    """A server with no phrase cache (one for the module: nothing it does is remembered)."""
    settings = ServerSettings(
        port=free_port(), workers=1, max_streams=TEST_MAX_STREAMS, cache_bytes=0
    )
    with running_server(settings, served_engine) as url:
        yield url


def test_a_server_without_a_cache_says_so(uncached_url: str) -> None:
    url = uncached_url
    with httpx.Client(timeout=30) as client:
        answer = _prefetch(client, url)
        assert answer.status_code == 409
        assert answer.json()["error"]["code"] == "cache_disabled"
        assert "voxflow_cache_hits_total" not in client.get(f"{url}/metrics").text


def test_warm_phrases_are_hits_and_readyz_says_when_they_are_done(
    server_factory: ServerFactory, tmp_path: Path
) -> None:
    warm = tmp_path / "warm.txt"
    warm.write_text(f"# greetings\n\n{PHRASE}\nThanks for calling, goodbye!\n", encoding="utf-8")
    with server_factory(workers=2, warm_path=warm) as url, httpx.Client(timeout=60) as client:
        states = []
        deadline = time.monotonic() + 60
        while True:
            ready = client.get(f"{url}/readyz")
            states.append(ready.json()["status"])
            if ready.status_code == 200:
                break
            assert ready.json()["status"] == "warming" and ready.status_code == 503
            assert ready.json()["warm"]["total"] >= 2
            assert time.monotonic() < deadline, "warming did not finish"
            time.sleep(0.02)
        assert states[-1] == "ready"
        assert _metric(client, url, "voxflow_cache_entries") >= 2
        misses = _metric(client, url, "voxflow_cache_misses_total")  # the warm's own lookups
        hits = _metric(client, url, "voxflow_cache_hits_total", 'tier="memory"')
        first, second = _speech(client, url), _speech(client, url)
        # Every engine request of both answers was a hit: nothing rendered afresh. (The two
        # need not be the same bytes: the lead hands over to its sentence at a word the
        # scheduler picks as the hits arrive, which a busy machine moves by a word.)
        assert _metric(client, url, "voxflow_cache_misses_total") == misses
        assert _metric(client, url, "voxflow_cache_hits_total", 'tier="memory"') >= hits + 2
        assert abs(len(first) - len(second)) < 0.1 * len(first)


def test_a_missing_warm_file_stops_the_server_from_starting(tmp_path: Path) -> None:
    from voxflow.config import ServerSettings  # noqa: PLC0415
    from voxflow.server.services import Services  # noqa: PLC0415

    with pytest.raises(FileNotFoundError):
        Services.build(ServerSettings(workers=1, warm_path=tmp_path / "missing.txt"))


@pytest.fixture
def redis(tmp_path: Path) -> Iterator[RedisServer]:
    with redis_server(tmp_path) as server:
        yield server


def test_a_phrase_rendered_on_one_replica_is_a_redis_hit_on_the_other(
    server_factory: ServerFactory, redis: RedisServer
) -> None:
    # A shared-tier read slower than cache_timeout_s is a miss by design (50 ms by default); on
    # a machine busy with the rest of the suite a read can take that long, and the other
    # replica would then render afresh. The bound has its own test (Redis stopped, below).
    patient = {"workers": 1, "cache_url": redis.url, "cache_timeout_s": 2.0}
    with (
        server_factory(**patient) as one,
        server_factory(**patient) as other,
        httpx.Client(timeout=60) as client,
    ):
        assert _prefetch(client, one, wait=True).status_code == 200
        # The write goes to Redis off the workers: wait until it is there.
        deadline = time.monotonic() + 10
        while _metric(client, one, "voxflow_cache_shared_writes_total") < 1:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        heard_one = _speech(client, one)
        heard_other = _speech(client, other)
        # The other replica rendered nothing afresh: every engine request was a Redis hit.
        # (Not the same bytes as the first replica's: where the lead hands over is timing.)
        assert _metric(client, other, "voxflow_cache_misses_total") == 0
        assert _metric(client, other, "voxflow_cache_hits_total", 'tier="shared"') >= 1
        assert abs(len(heard_other) - len(heard_one)) < 0.1 * len(heard_one)
        _speech(client, other)
        assert _metric(client, other, "voxflow_cache_misses_total") == 0
        assert _metric(client, other, "voxflow_cache_hits_total", 'tier="memory"') >= 1


def test_redis_stopped_mid_run_costs_no_request_and_comes_back(
    server_factory: ServerFactory, redis: RedisServer
) -> None:
    with server_factory(workers=1, cache_url=redis.url) as url, httpx.Client(timeout=60) as client:
        assert _prefetch(client, url, wait=True).status_code == 200
        assert _metric(client, url, "voxflow_cache_shared_up") == 1
        redis.stop()
        for n in range(3):  # each a miss in Redis: rendered, never an error
            assert len(_speech(client, url, f"Order number {n} is on its way.")) > 0
        misses = _metric(client, url, "voxflow_cache_misses_total")
        for _ in range(2):
            _speech(client, url)
        assert _metric(client, url, "voxflow_cache_misses_total") == misses  # from memory
        assert _metric(client, url, "voxflow_cache_shared_up") == 0
        assert _metric(client, url, "voxflow_cache_shared_errors_total") >= 1
        assert client.get(f"{url}/readyz").status_code == 200
        redis.start()
        deadline = time.monotonic() + 20
        for attempt in itertools.count():
            if _metric(client, url, "voxflow_cache_shared_up") == 1:
                break
            assert time.monotonic() < deadline, "the shared tier did not come back"
            # A new phrase each time: a phrase memory already holds never asks Redis, and one
            # asked within retry_s of the last failure is a miss without a try.
            _speech(client, url, f"Is Redis back yet? Attempt {attempt}.")
            time.sleep(0.1)


def _native(url: str) -> str:
    return url.replace("http://", "ws://") + "/v1/stream"


def _frames(ws: ClientConnection, context_id: str) -> list[dict[str, object]]:
    frames: list[dict[str, object]] = []
    while True:
        frame = json.loads(ws.recv(timeout=60))
        if frame.get("context_id") != context_id:
            continue
        frames.append(frame)
        if frame["type"] in ("done", "error"):
            return frames


def test_a_native_prefetch_makes_a_streamed_reply_a_hit(server_factory: ServerFactory) -> None:
    with server_factory(workers=2) as url, connect(_native(url)) as ws:
        ws.send(json.dumps({"type": "prefetch", "text": PHRASE, "seed": 11}))
        with httpx.Client(timeout=60) as client:
            # Background tasks run in order: by the time this one's segments run, the native
            # prefetch's are in the cache, and this one finds them there.
            after = _prefetch(client, url, seed=11, wait=True).json()
            assert [r["status"] for r in after["results"]] == ["cached"] * after["segments"]
        # As an agent streams an LLM's reply: a token at a time, 20 ms apart.
        ws.send(json.dumps({"type": "start", "context_id": "a", "seed": 11}))
        for token in re.findall(r"\S+\s*", PHRASE):
            ws.send(json.dumps({"type": "text", "context_id": "a", "text": token}))
            time.sleep(0.02)
        ws.send(json.dumps({"type": "end", "context_id": "a"}))
        frames = _frames(ws, "a")
        done = frames[-1]
        assert done["type"] == "done"
        metrics = done["metrics"]
        assert isinstance(metrics, dict) and metrics["cached"] is True
        # A reply with another seed is another rendering: a miss.
        ws.send(json.dumps({"type": "start", "context_id": "b", "seed": 12}))
        ws.send(json.dumps({"type": "text", "context_id": "b", "text": PHRASE}))
        ws.send(json.dumps({"type": "end", "context_id": "b"}))
        other = _frames(ws, "b")[-1]["metrics"]
        assert isinstance(other, dict) and other["cached"] is False


def test_a_native_prefetch_without_a_cache_is_an_error_and_the_socket_goes_on(
    uncached_url: str,
) -> None:
    with connect(_native(uncached_url)) as ws:
        ws.send(json.dumps({"type": "prefetch", "context_id": "p", "text": PHRASE}))
        error = json.loads(ws.recv(timeout=30))
        assert (error["type"], error["code"], error["context_id"]) == (
            "error",
            "cache_disabled",
            "p",
        )
        ws.send(json.dumps({"type": "prefetch", "context_id": "p", "text": 5}))
        assert json.loads(ws.recv(timeout=30))["code"] == "invalid_message"
        ws.send(json.dumps({"type": "text", "context_id": "a", "text": "Hi."}))
        ws.send(json.dumps({"type": "end", "context_id": "a"}))
        assert _frames(ws, "a")[-1]["type"] == "done"


def test_the_first_audio_says_which_text_it_waited_for(server_url: str) -> None:
    tokens = ["Hello ", "there. ", "How ", "are ", "you ", "doing ", "today?"]
    ends = [sum(len(t) for t in tokens[: n + 1]) for n in range(len(tokens))]
    with connect(_native(server_url)) as ws:
        ws.send(json.dumps({"type": "start", "context_id": "t"}))
        for token in tokens:
            ws.send(json.dumps({"type": "text", "context_id": "t", "text": token}))
            time.sleep(0.02)
        ws.send(json.dumps({"type": "end", "context_id": "t"}))
        frames = _frames(ws, "t")
    audio = [f for f in frames if f["type"] == "audio"]
    assert "text_end" in audio[0] and all("text_end" not in f for f in audio[1:])
    text_end = audio[0]["text_end"]
    # Cut once "Hello there." was confirmed, before the reply's end: at a message's end.
    assert text_end in ends and len("Hello there.") <= text_end < ends[-1], text_end
