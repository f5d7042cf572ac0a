"""Access control against a real server and real clients: API keys (httpx, the openai and
elevenlabs SDKs, the websockets package), the WebSocket Origin allow-list, the Host check against
DNS rebinding, and the demo page's security headers."""

from __future__ import annotations

import json
import logging
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from elevenlabs.client import ElevenLabs
from elevenlabs.core.api_error import ApiError
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from tests.support.servers import free_port, running_server
from voxflow.config import ServerSettings
from voxflow.engines.router import EngineRouter
from voxflow.server.security import read_api_keys_file

KEY = "vf-test-key-0123456789"
SECOND_KEY = "second.key_from-a-file"
APP_ORIGIN = "https://app.example"
INTERNAL_HOST = "voxflow.internal"


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory, served_engine: EngineRouter) -> Iterator[str]:
    keys_file = tmp_path_factory.mktemp("keys") / "keys.txt"
    keys_file.write_text(f"# the second client\n\n  {SECOND_KEY}  \n")
    settings = ServerSettings(
        port=free_port(),
        workers=1,
        api_keys=(KEY,),
        api_keys_file=keys_file,
        allowed_origins=(APP_ORIGIN,),
        allowed_hosts=(INTERNAL_HOST,),
    )
    with running_server(settings, served_engine) as base:
        yield base


@pytest.fixture
def http(url: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=url, timeout=60) as client:
        yield client


def _ws(url: str, path: str) -> str:
    return url.replace("http://", "ws://", 1) + path


def _refused_handshake(url: str, **kwargs: Any) -> tuple[int, dict[str, Any], dict[str, str]]:
    """Open a WebSocket that must be refused: its HTTP status, JSON body and headers."""
    with pytest.raises(InvalidStatus) as refused, connect(url, open_timeout=30, **kwargs):
        pass
    response = refused.value.response
    return response.status_code, json.loads(bytes(response.body or b"")), dict(response.headers)


def _native_roundtrip(url: str, **kwargs: Any) -> list[str]:
    """Speak a few words over an accepted native WebSocket: the event types received."""
    with connect(url, open_timeout=30, **kwargs) as ws:
        ws.send(json.dumps({"type": "text", "text": "Hi there."}))
        ws.send(json.dumps({"type": "end"}))
        types: list[str] = []
        while not types or types[-1] not in ("done", "error"):
            frame = ws.recv(timeout=60)
            if isinstance(frame, str):
                types.append(json.loads(frame)["type"])
    return types


# -- API keys over HTTP ------------------------------------------------------------------------


def test_no_key_is_refused_in_the_shape_of_each_protocol(http: httpx.Client) -> None:
    speech = http.post("/v1/audio/speech", json={"model": "tts-1", "input": "Hi", "voice": "alloy"})
    assert speech.status_code == 401 and speech.headers["www-authenticate"] == "Bearer"
    error = speech.json()["error"]
    assert (error["code"], error["type"]) == ("unauthorized", "invalid_request_error")
    for response in (
        http.get("/v1/voices"),
        http.get("/v2/voices"),
        http.post("/v1/text-to-speech/joe", json={"text": "Hi"}),
    ):
        assert response.status_code == 401, response.request.url
        assert response.headers["www-authenticate"] == "Bearer"
        assert response.json()["detail"]["status"] == "invalid_api_key"
    cartesia = http.post("/tts/bytes", json={"transcript": "Hi"})
    assert cartesia.status_code == 401
    assert cartesia.json()["error_code"] == "invalid_api_key"
    deepgram = http.post("/v1/speak", json={"text": "Hi"})
    assert deepgram.status_code == 401 and deepgram.json()["err_code"] == "INVALID_AUTH"
    assert deepgram.json()["request_id"] == deepgram.headers["x-request-id"]
    metrics = http.get("/metrics")
    assert metrics.status_code == 401
    assert metrics.json()["error"]["code"] == "unauthorized"
    assert "api_key" in metrics.json()["error"]["message"]  # it says how to send one


def test_health_and_the_demo_page_need_no_key(http: httpx.Client) -> None:
    for path in ("/healthz", "/readyz", "/", "/static/app.js"):
        assert http.get(path).status_code == 200, path


@pytest.mark.parametrize(
    ("headers", "params"),
    [
        ({"Authorization": f"Bearer {KEY}"}, {}),
        ({"Authorization": f"bearer {SECOND_KEY}"}, {}),
        ({"xi-api-key": KEY}, {}),
        ({}, {"api_key": KEY}),
        ({}, {"xi_api_key": SECOND_KEY}),
        ({}, {"authorization": f"Bearer {KEY}"}),
        ({"Authorization": f"Token {KEY}"}, {}),  # Deepgram's clients
        ({"X-API-Key": SECOND_KEY}, {}),  # Pipecat's and LiveKit's Cartesia services
    ],
    ids=[
        "bearer",
        "bearer-file-key",
        "xi-api-key",
        "api_key",
        "xi_api_key",
        "authorization",
        "token",
        "x-api-key",
    ],
)
def test_the_right_key_works_each_way(
    http: httpx.Client, headers: dict[str, str], params: dict[str, str]
) -> None:
    response = http.get("/v1/voices", headers=headers, params=params)
    assert response.status_code == 200
    assert [voice["name"] for voice in response.json()["voices"]] == ["joe"]


@pytest.mark.parametrize(
    ("headers", "params"),
    [
        ({"Authorization": "Bearer wrong"}, {}),
        ({"Authorization": f"Bearer {KEY}x"}, {}),
        ({"Authorization": f"Bearer {KEY[:-1]}"}, {}),
        ({"Authorization": f"Basic {KEY}"}, {}),
        ({"Authorization": f"Token {KEY}x"}, {}),
        ({"xi-api-key": KEY.upper()}, {}),
        ({"X-API-Key": "wrong"}, {}),
        ({}, {"api_key": "wrong"}),
    ],
)
def test_a_wrong_key_is_refused(
    http: httpx.Client, headers: dict[str, str], params: dict[str, str]
) -> None:
    response = http.get("/metrics", headers=headers, params=params)
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "unauthorized"


def _rejected(http: httpx.Client, reason: str) -> float:
    text = http.get("/metrics", headers={"authorization": f"Bearer {KEY}"}).text
    prefix = f'voxflow_rejected_total{{reason="{reason}"}} '
    return sum(float(line[len(prefix) :]) for line in text.splitlines() if line.startswith(prefix))


def test_refusals_are_counted_by_reason(http: httpx.Client) -> None:
    before = _rejected(http, "unauthorized"), _rejected(http, "forbidden_host")
    assert http.get("/metrics").status_code == 401
    assert http.get("/v1/voices", headers={"host": "evil.example"}).status_code == 403
    after = _rejected(http, "unauthorized"), _rejected(http, "forbidden_host")
    assert after == (before[0] + 1, before[1] + 1)


def test_the_openai_sdk_with_and_without_the_key(url: str) -> None:
    with openai.OpenAI(base_url=url + "/v1", api_key=KEY, max_retries=0) as client:
        audio = client.audio.speech.create(
            model="tts-1", voice="alloy", input="Hello.", response_format="pcm"
        )
        assert len(audio.content) > 24000 * 2 * 0.2  # at least 0.2 s of 24 kHz s16le
    with openai.OpenAI(base_url=url + "/v1", api_key="wrong", max_retries=0) as client:
        with pytest.raises(openai.AuthenticationError) as refused:
            client.audio.speech.create(model="tts-1", voice="alloy", input="Hello.")
        assert refused.value.status_code == 401 and refused.value.code == "unauthorized"


def test_the_openai_model_list_needs_the_key_too(url: str) -> None:
    with openai.OpenAI(base_url=url + "/v1", api_key=KEY, max_retries=0) as client:
        assert "tts-1" in [model.id for model in client.models.list()]
        assert client.models.retrieve("voxflow").id == "voxflow"
    with openai.OpenAI(base_url=url + "/v1", api_key="wrong", max_retries=0) as client:
        with pytest.raises(openai.AuthenticationError) as refused:
            client.models.list()
        assert refused.value.status_code == 401 and refused.value.code == "unauthorized"
        # OpenAI's error object (a "type" the generic refusal lacks), as for /v1/audio/.
        assert refused.value.type == "invalid_request_error"
        with pytest.raises(openai.AuthenticationError):
            client.models.retrieve("tts-1")


def test_the_elevenlabs_sdk_with_and_without_the_key(url: str) -> None:
    with httpx.Client(timeout=60) as http:
        client = ElevenLabs(base_url=url, api_key=KEY, httpx_client=http)
        assert [voice.voice_id for voice in client.voices.get_all().voices] == ["joe"]
        audio = b"".join(
            client.text_to_speech.convert("joe", text="Hello.", output_format="pcm_16000")
        )
        assert len(audio) > 16000 * 2 * 0.2
        wrong = ElevenLabs(base_url=url, api_key="wrong", httpx_client=http)
        with pytest.raises(ApiError) as refused:
            wrong.voices.get_all()
        assert refused.value.status_code == 401


# -- API keys over WebSockets ------------------------------------------------------------------


def test_a_websocket_without_the_key_is_refused_before_it_opens(url: str) -> None:
    status, body, headers = _refused_handshake(_ws(url, "/v1/stream"))
    assert status == 401 and headers["www-authenticate"] == "Bearer"
    assert body["error"]["code"] == "unauthorized"
    status, body, _ = _refused_handshake(
        _ws(url, "/v1/text-to-speech/joe/multi-stream-input?output_format=pcm_16000"),
        additional_headers={"xi-api-key": "wrong"},
    )
    assert status == 401 and body["detail"] == {
        "status": "invalid_api_key",
        "message": "invalid API key",
    }


@pytest.mark.parametrize(
    ("path", "headers"),
    [
        ("/v1/stream", {"Authorization": f"Bearer {KEY}"}),
        ("/v1/stream", {"xi-api-key": SECOND_KEY}),
        (f"/v1/stream?api_key={KEY}", {}),
        ("/v1/stream", {"X-API-Key": KEY}),
    ],
    ids=["bearer", "xi-api-key", "query", "x-api-key"],
)
def test_a_websocket_with_the_key_speaks(url: str, path: str, headers: dict[str, str]) -> None:
    types = _native_roundtrip(_ws(url, path), additional_headers=headers)
    assert "audio" in types and types[-1] == "done"


def test_the_elevenlabs_websocket_takes_its_query_key(url: str) -> None:
    path = f"/v1/text-to-speech/joe/stream-input?authorization={KEY}&output_format=pcm_16000"
    with connect(_ws(url, path), open_timeout=30) as ws:
        ws.send(json.dumps({"text": " "}))
        ws.send(json.dumps({"text": "Hello there. "}))
        ws.send(json.dumps({"text": ""}))
        frames = [json.loads(ws.recv(timeout=60)) for _ in range(2)]
    assert frames[0]["audio"]  # audio came, so the connection was accepted


# -- Origin ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "origin",
    ["https://evil.example", "null", "http://app.example", "http://127.0.0.1.evil.example"],
)
def test_a_foreign_origin_is_refused_even_with_the_key(url: str, origin: str) -> None:
    status, body, _ = _refused_handshake(
        _ws(url, f"/v1/stream?api_key={KEY}"), additional_headers={"Origin": origin}
    )
    assert status == 403 and body["error"]["code"] == "forbidden_origin"


def test_a_foreign_page_cannot_post_either(http: httpx.Client) -> None:
    # A simple cross-site POST needs no CORS consent: the Origin check is what stops it.
    body = {"model": "tts-1", "input": "Hi", "voice": "alloy"}
    auth = {"Authorization": f"Bearer {KEY}"}
    refused = http.post(
        "/v1/audio/speech", json=body, headers={**auth, "Origin": "https://evil.example"}
    )
    assert refused.status_code == 403
    assert refused.json()["error"]["code"] == "forbidden_origin"
    allowed = http.get("/v1/voices", headers={**auth, "Origin": "http://localhost:3000"})
    assert allowed.status_code == 200


def test_same_origin_loopback_and_allowed_origins_are_accepted(url: str) -> None:
    port = url.rsplit(":", 1)[1]
    for origin in (
        f"http://127.0.0.1:{port}",  # the page the server itself served
        "http://localhost:5173",  # a dev server on this machine
        "http://[::1]:3000",
        APP_ORIGIN,
    ):
        types = _native_roundtrip(
            _ws(url, "/v1/stream"),
            additional_headers={"Origin": origin, "Authorization": f"Bearer {KEY}"},
        )
        assert types[-1] == "done", origin


# -- Host (DNS rebinding) ----------------------------------------------------------------------


def test_a_rebinding_host_is_refused_on_a_loopback_server(http: httpx.Client) -> None:
    auth = {"Authorization": f"Bearer {KEY}"}
    refused = http.get("/v1/voices", headers={**auth, "Host": "evil.example"})
    assert refused.status_code == 403
    assert refused.json()["detail"]["status"] == "forbidden_host"
    assert http.get("/", headers={"Host": "evil.example:8000"}).status_code == 403
    # Probes address a pod by IP: health needs no Host either.
    assert http.get("/healthz", headers={"Host": "10.0.0.7:8000"}).status_code == 200
    for host in ("localhost:1234", "[::1]", "127.0.0.1", INTERNAL_HOST, f"{INTERNAL_HOST}:443"):
        assert http.get("/v1/voices", headers={**auth, "Host": host}).status_code == 200, host


def test_a_rebinding_host_cannot_open_a_websocket(url: str) -> None:
    port = int(url.rsplit(":", 1)[1])
    # A browser on a rebound name: it connects to 127.0.0.1 but says Host: evil.example, and
    # its Origin is that same name (same origin as far as the browser knows).
    for host, expected in (("evil.example", 403), (INTERNAL_HOST, 101)):
        with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
            uri = f"ws://{host}:{port}/v1/stream?api_key={KEY}"
            origin = {"Origin": f"http://{host}:{port}"}
            if expected == 403:
                status, body, _ = _refused_handshake(uri, sock=sock, additional_headers=origin)
                assert status == 403 and body["error"]["code"] == "forbidden_host"
            else:
                with connect(uri, sock=sock, additional_headers=origin, open_timeout=30) as ws:
                    assert ws.response is not None and ws.response.status_code == expected


def test_a_public_server_without_keys_checks_no_host_and_no_key(
    caplog: pytest.LogCaptureFixture, served_engine: EngineRouter
) -> None:
    # The friendly default, bound to all interfaces: no key, any Host name (a proxy's).
    settings = ServerSettings(port=free_port(), workers=1, host="0.0.0.0")
    with (
        running_server(settings, served_engine) as base,
        httpx.Client(base_url=base, timeout=60) as http,
    ):
        response = http.get("/v1/voices", headers={"Host": "tts.example.com"})
        assert response.status_code == 200 and response.json()["voices"]
    # ... and the operator is told so at start-up.
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("0.0.0.0 without an API key" in message for message in warnings)


# -- the demo page's headers -------------------------------------------------------------------


def test_the_demo_page_and_its_files_carry_security_headers(http: httpx.Client) -> None:
    for path in ("/", "/static/app.js", "/static/style.css"):
        headers = http.get(path).headers
        csp = headers["content-security-policy"]
        assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp, path
        assert "connect-src 'self'" in csp and "unsafe-inline" not in csp, path
        assert headers["x-content-type-options"] == "nosniff", path
        assert headers["referrer-policy"] == "no-referrer", path
        assert headers["x-frame-options"] == "DENY", path


# -- settings ----------------------------------------------------------------------------------


def test_keys_come_from_flags_variables_and_files(tmp_path: Path) -> None:
    env = {
        "VOXFLOW_API_KEYS": " one , two,,",
        "VOXFLOW_ALLOWED_ORIGINS": "https://a.example,https://b.example:8443",
        "VOXFLOW_ALLOWED_HOSTS": "tts.internal",
        "VOXFLOW_API_KEYS_FILE": str(tmp_path / "keys"),
    }
    settings = ServerSettings.from_env(env)
    assert settings.api_keys == ("one", "two")
    assert settings.allowed_origins == ("https://a.example", "https://b.example:8443")
    assert settings.allowed_hosts == ("tts.internal",)
    assert settings.api_keys_file == tmp_path / "keys"
    assert ServerSettings.from_env(env, api_keys=("flag",)).api_keys == ("flag",)
    (tmp_path / "keys").write_text("# comment\nalpha\n\n  beta \n")
    assert read_api_keys_file(tmp_path / "keys") == ("alpha", "beta")
    (tmp_path / "keys").write_text("# only a comment\n")
    with pytest.raises(ValueError, match="no API key"):
        read_api_keys_file(tmp_path / "keys")


@pytest.mark.parametrize(
    "bad",
    [
        {"api_keys": ("has space",)},
        {"api_keys": ("",)},
        {"allowed_origins": ("app.example",)},
        {"allowed_origins": ("https://app.example/path",)},
        {"allowed_hosts": ("evil.example/x",)},
    ],
)
def test_bad_access_settings_are_refused(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        ServerSettings(**bad)


def test_a_string_is_not_a_list_of_keys() -> None:
    with pytest.raises(TypeError):
        ServerSettings(api_keys="abc")  # type: ignore[arg-type]
    assert ServerSettings(api_keys=["abc"]).api_keys == ("abc",)  # type: ignore[arg-type]
