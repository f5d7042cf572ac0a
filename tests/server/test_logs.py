"""Logs an operator can use, against a real server logging as ``voxflow serve`` does: no key or
query string in any line (uvicorn's included, at debug level), a request id on every line of a
request and on every answer, JSON lines that parse."""

from __future__ import annotations

import contextlib
import io
import json
import logging
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from tests.support.serve_process import serve_process
from tests.support.servers import free_port
from voxflow.cli.main import build_parser
from voxflow.cli.serve import access_overrides
from voxflow.config import ServerSettings
from voxflow.server.app import create_app
from voxflow.server.logs import JsonFormatter, RedactFilter, configure_logging
from voxflow.server.security import configured_keys
from voxflow.server.uvicorn_config import uvicorn_config

KEY = "vf-log-key-0123456789"
WRONG_KEYS = ("wrong-query-secret-111", "wrong-bearer-secret-222", "wrong-ws-secret-333")


@contextlib.contextmanager
def _logged_server(settings: ServerSettings, stream: io.StringIO) -> Iterator[str]:
    """A real uvicorn server in a thread, logging as ``voxflow serve`` sets it up."""
    restore = configure_logging(settings, configured_keys(settings), stream)
    try:
        config = uvicorn_config(
            create_app(settings),
            settings,
            log_level=settings.log_level,
            log_config=None,
            lifespan="on",
        )
        server = uvicorn.Server(config)
        thread = threading.Thread(target=server.run, name="test-uvicorn-logs", daemon=True)
        thread.start()
        deadline = time.monotonic() + 60
        while not server.started:
            assert thread.is_alive() and time.monotonic() < deadline, "server did not start"
            time.sleep(0.02)
        try:
            yield f"http://127.0.0.1:{settings.port}"
        finally:
            server.should_exit = True
            thread.join(15)
            assert not thread.is_alive(), "the test server did not stop"
    finally:
        restore()


def _ws(url: str, path: str) -> str:
    return url.replace("http://", "ws://", 1) + path


def _speak(url: str, **kwargs: Any) -> str:
    """A native stream to its end: the x-request-id of its 101."""
    with connect(url, open_timeout=30, **kwargs) as ws:
        ws.send(json.dumps({"type": "text", "text": "Hi."}))
        ws.send(json.dumps({"type": "end"}))
        while not (isinstance(frame := ws.recv(timeout=60), str) and '"done"' in frame):
            pass
        assert ws.response is not None
        return str(ws.response.headers["x-request-id"])


def _refused(url: str, **kwargs: Any) -> InvalidStatus:
    with pytest.raises(InvalidStatus) as refused, connect(url, open_timeout=30, **kwargs):
        pass
    return refused.value


def test_keys_and_query_strings_reach_no_log(caplog: pytest.LogCaptureFixture) -> None:
    stream = io.StringIO()
    settings = ServerSettings(port=free_port(), workers=1, api_keys=(KEY,), log_level="debug")
    with _logged_server(settings, stream) as url:
        # pytest's capture handler too: it sees what any other handler on the root would.
        logging.getLogger().addHandler(caplog.handler)
        caplog.set_level(logging.DEBUG)
        with httpx.Client(base_url=url, timeout=60) as http:
            assert http.get("/v1/voices", params={"api_key": KEY}).status_code == 200
            assert http.get("/v1/voices", params={"api_key": WRONG_KEYS[0]}).status_code == 401
            wrong_bearer = {"Authorization": f"Bearer {WRONG_KEYS[1]}"}
            assert http.get("/metrics", headers=wrong_bearer).status_code == 401
        _speak(_ws(url, f"/v1/stream?api_key={KEY}&audio=binary"))
        refused = _refused(_ws(url, f"/v1/stream?xi_api_key={WRONG_KEYS[2]}"))
        assert refused.response.status_code == 401
        # ElevenLabs clients may repeat the key in their first frame: debug logs show frames.
        eleven = "/v1/text-to-speech/joe/stream-input?output_format=pcm_16000"
        with connect(_ws(url, eleven), additional_headers={"xi-api-key": KEY}) as ws:
            ws.send(json.dumps({"text": " ", "xi-api-key": KEY, "authorization": f"Bearer {KEY}"}))
            ws.send(json.dumps({"text": "Hello. "}))
            ws.send(json.dumps({"text": ""}))
            assert json.loads(ws.recv(timeout=60))["audio"]
    output = stream.getvalue()
    captured = output + caplog.text + "".join(r.getMessage() for r in caplog.records)
    # The lines are there (so the absence below means something) ...
    assert '"GET /v1/voices HTTP/1.1" 200' in output and '"GET /v1/voices HTTP/1.1" 401' in output
    assert '"WebSocket /v1/stream" [accepted]' in output and '"WebSocket /v1/stream" 401' in output
    assert any(r.name == "uvicorn.error" and r.levelno == logging.DEBUG for r in caplog.records)
    assert any(r.name == "uvicorn.access" for r in caplog.records)
    # ... without a key, right or wrong, or a query string.
    for secret in (KEY, *WRONG_KEYS):
        assert secret not in captured
    assert "api_key=" not in captured and "audio=binary" not in captured
    # uvicorn's false error after a refused handshake (Kludex/uvicorn#3138) is not there.
    assert "without completing handshake" not in captured


def test_json_lines_carry_the_request_id_given_or_made() -> None:
    stream = io.StringIO()
    settings = ServerSettings(port=free_port(), workers=1, log_format="json")
    with _logged_server(settings, stream) as url:
        with httpx.Client(base_url=url, timeout=60) as http:
            given = http.get("/v1/voices", headers={"x-request-id": "trace-42.a_b"})
            insane = http.get("/v1/voices", headers={"x-request-id": "bad id!"})
            too_long = http.get("/healthz", headers={"x-request-id": "a" * 129})
            made = http.get("/readyz")
        ws_id = _speak(_ws(url, "/v1/stream"), additional_headers={"x-request-id": "ws-7"})
        refused = _refused(
            _ws(url, "/v1/stream"), additional_headers={"Origin": "https://evil.example"}
        )
    assert given.headers["x-request-id"] == "trace-42.a_b" and ws_id == "ws-7"
    generated = [r.headers["x-request-id"] for r in (insane, too_long, made)]
    generated.append(refused.response.headers["x-request-id"])
    for request_id in generated:
        assert len(request_id) == 32 and int(request_id, 16) >= 0
    assert len(set(generated)) == len(generated)

    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert lines and all(
        {"time", "level", "logger", "message", "request_id"} <= set(line) for line in lines
    )
    by_id: dict[str | None, list[dict[str, Any]]] = {}
    for line in lines:
        by_id.setdefault(line["request_id"], []).append(line)
    assert '"GET /v1/voices HTTP/1.1" 200' in by_id["trace-42.a_b"][0]["message"]
    assert any("[accepted]" in line["message"] for line in by_id["ws-7"])
    for request_id in generated:
        assert by_id[request_id], request_id  # the access line (or the refusal's) has it
    refusal = by_id[generated[-1]]
    assert {line["logger"] for line in refusal} >= {"voxflow.server.security", "uvicorn.error"}
    # Lines outside any request have none: start-up, shutdown.
    assert any("Application startup complete" in line["message"] for line in by_id[None])


def test_text_lines_show_the_request_id() -> None:
    stream = io.StringIO()
    settings = ServerSettings(port=free_port(), workers=1)
    with _logged_server(settings, stream) as url, httpx.Client(base_url=url, timeout=60) as http:
        assert http.get("/healthz", headers={"x-request-id": "t-1"}).status_code == 200
    lines = stream.getvalue().splitlines()
    assert any(" uvicorn.access [t-1] " in line and "/healthz" in line for line in lines)
    assert any(" uvicorn.error [-] " in line and "startup complete" in line for line in lines)


def test_tracebacks_are_redacted_and_json_carries_them() -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    handler.addFilter(RedactFilter(["configured-secret"]))
    logger = logging.getLogger("tests.server.logs.traceback")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        try:
            raise ValueError("GET /v1/stream?api_key=qs-secret, Authorization: Bearer bearer-zz")
        except ValueError:
            logger.exception("failed with %s", {"xi-api-key": "configured-secret"})
    finally:
        logger.removeHandler(handler)
        logger.propagate = True
        handler.close()
    (line,) = stream.getvalue().splitlines()
    entry = json.loads(line)
    assert entry["level"] == "ERROR" and entry["request_id"] is None
    assert "Traceback" in entry["exc_info"] and "ValueError" in entry["exc_info"]
    for secret in ("qs-secret", "bearer-zz", "configured-secret"):
        assert secret not in line
    assert "GET /v1/stream Authorization: [redacted]" in entry["exc_info"]


def test_redaction_keeps_the_shape_of_uvicorns_access_record() -> None:
    redact = RedactFilter()
    record = logging.LogRecord(
        "uvicorn.access",
        logging.INFO,
        __file__,
        1,
        '%s - "%s %s HTTP/%s" %d',
        ("127.0.0.1:5000", "GET", "/v1/voices?api_key=abc&x=1", "1.1", 200),
        None,
    )
    assert redact.filter(record) and redact.filter(record)  # twice: nothing more changes
    assert record.args == ("127.0.0.1:5000", "GET", "/v1/voices", "1.1", 200)
    headers = [(b"authorization", b"Bearer tok-1"), (b"xi-api-key", b"tok-2")]
    for text in (str(headers), "xi-api-key: tok-2", '{"api_key": "tok-2"}', "bearer tok-1"):
        assert "tok-" not in redact.redact(text), text
    assert redact.redact("what? fine.") == "what? fine."  # prose keeps its question marks


def test_serve_flags_and_variables_set_the_log_settings() -> None:
    args = build_parser().parse_args(
        [
            *(
                "serve",
                "--api-key",
                "a1",
                "--api-key",
                "b2",
                "--allowed-origin",
                "https://x.example",
            ),
            *("--allowed-host", "tts.internal", "--log-level", "warning", "--log-format", "json"),
        ]
    )
    settings = ServerSettings.from_env({}, **access_overrides(args))
    assert settings.api_keys == ("a1", "b2") and settings.allowed_origins == ("https://x.example",)
    assert settings.allowed_hosts == ("tts.internal",)
    assert (settings.log_level, settings.log_format) == ("warning", "json")
    verbose = build_parser().parse_args(["-v", "serve"])
    env = {"VOXFLOW_LOG_LEVEL": "ERROR", "VOXFLOW_LOG_FORMAT": "json"}
    assert ServerSettings.from_env(env, **access_overrides(verbose)).log_level == "debug"
    quiet = build_parser().parse_args(["serve"])
    assert ServerSettings.from_env(env, **access_overrides(quiet)).log_level == "error"
    with pytest.raises(ValueError):
        ServerSettings(log_level="verbose")
    with pytest.raises(ValueError):
        ServerSettings(log_format="xml")


def test_voxflow_serve_logs_json_without_the_key(tmp_path: Path) -> None:
    stderr_path = tmp_path / "stderr.log"
    args = ["--workers", "1", "--api-key", KEY, "--log-format", "json"]
    with stderr_path.open("wb") as stderr, serve_process(args=args, stderr=stderr) as served:
        process, port = served
        url = f"http://127.0.0.1:{port}"
        with httpx.Client(base_url=url, timeout=60) as http:
            params = {"api_key": KEY}
            headers = {"x-request-id": "cli-1"}
            assert http.get("/v1/voices", params=params, headers=headers).status_code == 200
        _speak(_ws(url, f"/v1/stream?api_key={KEY}"))
        process.send_signal(signal.SIGTERM)  # its last lines are logged as it stops
        process.wait(60)
    output = stderr_path.read_text()
    lines = [json.loads(line) for line in output.splitlines() if line.strip()]
    assert KEY not in output and "api_key" not in output
    access = [line for line in lines if line["logger"] == "uvicorn.access"]
    assert any(line["request_id"] == "cli-1" and "/v1/voices" in line["message"] for line in access)
    assert any("[accepted]" in line["message"] and line["request_id"] for line in lines)
    assert any("authentication on (1 API key)" in line["message"] for line in lines)
