"""The HTTP bodies of ``POST /v1/audio/speech`` (OpenAI) and ``POST /v1/text-to-speech/{voice_id}``
(ElevenLabs) against 5,000 generated bodies each, through the code that checks them: the body
model (as FastAPI, or the ElevenLabs routes, hand it the body) and the endpoint's ``plan``, which
checks every option with ``voxflow.session.options``. A body is either accepted, with a clean text
and finite settings, or refused with a 4xx in the protocol's error shape, strict JSON in UTF-8,
with a catalogued code. A few hundred of them also go to a real server, which must answer each
with a 200 and a whole body or a 4xx in the protocol's shape, never a 5xx or a traceback."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.fuzz_inputs import (
    FUZZ,
    assert_catalogued,
    assert_strict_json,
    encode,
    junk_frames,
    mutated,
    names,
    nasty_text,
)
from tests.support.protocols import protocol_context
from voxflow.connection.protocol_context import ProtocolContext
from voxflow.engines.base import VoiceSettings
from voxflow.session.errors import SessionError
from voxflow.transports.elevenlabs import http as elevenlabs_http
from voxflow.transports.openai import http as openai_http

BODIES_PER_EXAMPLE = 10
# Any control character but tab and line breaks, or a lone surrogate: none may reach the session.
UNCLEAN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")


@pytest.fixture(scope="module")
def context() -> ProtocolContext:
    return protocol_context()


texts = st.one_of(st.sampled_from(["Hello there.", "It costs $3.50, ok?", " ", ""]), nasty_text)
OPENAI: dict[str, Any] = {
    "model": "tts-1",
    "input": "Hello there.",
    "voice": "alloy",
    "response_format": "pcm",
    "speed": 1.25,
    "stream_format": "audio",
    "instructions": "Cheerful.",
    "seed": 7,
}
ELEVENLABS: dict[str, Any] = {
    "text": "Hello there.",
    "model_id": "eleven_flash_v2_5",
    "voice_settings": {"speed": 1.1, "stability": 0.5, "similarity_boost": 0.75},
    "seed": 7,
    "apply_text_normalization": "auto",
    "previous_text": "Hi.",
    "language_code": "en",
}


def _bodies(template: dict[str, Any], text_field: str) -> st.SearchStrategy[bytes]:
    """Request bodies: the template with a generated text, mutated, or no such body at all."""
    messages = st.builds(lambda text: {**template, text_field: text}, texts)
    return st.one_of(
        st.builds(encode, messages).map(str.encode),
        st.builds(encode, mutated(messages)).map(str.encode),
        # Non-ASCII as UTF-8, and a lone surrogate as the bytes no UTF-8 decoder accepts.
        st.builds(encode, mutated(messages), st.just(False)).map(
            lambda text: text.encode("utf-8", "surrogatepass")
        ),
        junk_frames.map(lambda text: text.encode("utf-8", "surrogatepass")),
        st.binary(max_size=32),
    )


def _assert_refusal(error: SessionError, status: int, body: bytes) -> dict[str, Any]:
    assert_catalogued(error.code)
    assert 400 <= status < 500, (error.code, status)
    answer = assert_strict_json(body)
    assert isinstance(answer, dict)
    return answer


def _assert_clean(text: str, settings: VoiceSettings) -> None:
    assert text and UNCLEAN.search(text) is None
    assert 0.25 <= settings.speed <= 4.0
    assert settings.seed is None or 0 <= settings.seed < 2**32


def _check_openai(context: ProtocolContext, raw: bytes) -> None:
    request = openai_http.SpeechRequest.model_validate(raw)  # as the route reads it
    try:
        plan = openai_http.plan(request, context)
    except SessionError as error:
        response = openai_http.error_response(error)
        answer = _assert_refusal(error, response.status_code, bytes(response.body))
        assert set(answer) == {"error"}
        assert set(answer["error"]) == {"message", "type", "param", "code"}
        assert answer["error"]["code"] == error.code
        return
    _assert_clean(plan.text, plan.settings)


def _check_elevenlabs(context: ProtocolContext, voice_id: str, fmt: str | None, raw: bytes) -> None:
    body = elevenlabs_http.SpeechBody.model_validate(raw)  # as the routes read it
    try:
        plan = elevenlabs_http.plan(context, voice_id, body, fmt)
    except SessionError as error:
        response = elevenlabs_http.error_response(error)
        answer = _assert_refusal(error, response.status_code, bytes(response.body))
        assert set(answer) == {"detail"} and set(answer["detail"]) == {"status", "message"}
        return
    _assert_clean(plan.text, plan.settings)


# 500 examples of 10 bodies: 5,000 bodies (the same every run: derandomized).
@settings(FUZZ, max_examples=500)
@given(batch=st.lists(_bodies(OPENAI, "input"), min_size=10, max_size=10))
def test_openai_bodies_are_accepted_clean_or_refused_in_openai_shape(
    context: ProtocolContext, batch: list[bytes]
) -> None:
    for raw in batch:
        _check_openai(context, raw)


formats = st.one_of(st.sampled_from([None, "pcm_22050", "mp3_44100_128", "wav_1"]), names)
voice_ids = st.one_of(st.sampled_from(["joe", "21m00Tcm4TlvDq8ikWAM"]), names)


# 500 examples of a voice id, an output format and 10 bodies: 5,000 bodies.
@settings(FUZZ, max_examples=500)
@given(
    voice_id=voice_ids,
    fmt=formats,
    batch=st.lists(_bodies(ELEVENLABS, "text"), min_size=10, max_size=10),
)
def test_elevenlabs_bodies_are_accepted_clean_or_refused_in_elevenlabs_shape(
    context: ProtocolContext, voice_id: str, fmt: str | None, batch: list[bytes]
) -> None:
    for raw in batch:
        _check_elevenlabs(context, voice_id, fmt, raw)


# -- a sample through a real server ---------------------------------------------------------------


@st.composite
def _server_bodies(draw: st.DrawFn, template: dict[str, Any], text_field: str) -> bytes:
    """Half of them valid requests with a short text (an accepted request is synthesized, and
    the sample is about the answers), the rest as ``_bodies``."""
    kind = draw(st.integers(0, 9))
    text = draw(st.sampled_from(["Hi.", "Ok, go."]) if kind < 4 else nasty_text)[:12]
    message = {**template, text_field: text}
    if kind < 6:
        return encode(message).encode()
    if kind < 8:
        return encode(draw(mutated(st.just(message)))).encode()
    if kind < 9:
        return encode(draw(mutated(st.just(message))), False).encode("utf-8", "surrogatepass")
    junk: str = draw(junk_frames)
    return junk.encode("utf-8", "surrogatepass")


@pytest.fixture(scope="module")
def client(server_url: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server_url, timeout=60.0) as opened:
        yield opened


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def server_logs() -> Iterator[_Records]:
    """What the server logs while a test runs, checked after it: no error and no traceback.
    uvicorn's "Exception in ASGI application" goes to ``uvicorn.error``, which does not reach the
    root logger (uvicorn's logging configuration stops it), so it is listened to as well."""
    records = _Records()
    loggers = (logging.getLogger(), logging.getLogger("uvicorn.error"))
    for logger in loggers:
        logger.addHandler(records)
    try:
        yield records
    finally:
        for logger in loggers:
            logger.removeHandler(records)
    problems = [r for r in records.records if r.levelno >= logging.ERROR or r.exc_info]
    assert problems == [], [r.getMessage() for r in problems]
    assert not any("Traceback" in r.getMessage() for r in records.records)


def _assert_answer(response: httpx.Response, raw: bytes, shape: set[str]) -> None:
    if response.status_code == 200:
        media_type = response.headers["content-type"]
        if media_type.startswith("application/json"):
            assert_strict_json(response.content)
        elif "ndjson" in media_type:
            for json_line in response.content.splitlines():
                assert_strict_json(json_line)
        elif media_type.startswith("text/event-stream"):
            for line in response.text.splitlines():
                if line.startswith("data: "):
                    assert_strict_json(line[6:])
        return
    assert 400 <= response.status_code < 500, (response.status_code, response.content[:300])
    answer = assert_strict_json(response.content)
    assert set(answer) == shape, answer


# 100 bodies to each endpoint: 200 requests, about half of them accepted.
SERVER = settings(
    FUZZ,
    max_examples=100,
    suppress_health_check=[*FUZZ.suppress_health_check, HealthCheck.function_scoped_fixture],
)


@SERVER
@given(raw=_server_bodies({**OPENAI, "speed": 4.0}, "input"))
def test_the_server_answers_openai_bodies_with_200_or_an_openai_4xx(
    client: httpx.Client, server_logs: _Records, raw: bytes
) -> None:
    response = client.post(
        "/v1/audio/speech", content=raw, headers={"content-type": "application/json"}
    )
    _assert_answer(response, raw, {"error"})


el_paths = st.sampled_from(["", "/stream", "/with-timestamps", "/stream/with-timestamps"])


@SERVER
@given(
    voice_id=st.sampled_from(["joe", "21m00Tcm4TlvDq8ikWAM", "nobody", "j%00e"]),
    path=el_paths,
    raw=_server_bodies(ELEVENLABS, "text"),
)
def test_the_server_answers_elevenlabs_bodies_with_200_or_an_elevenlabs_4xx(
    client: httpx.Client,
    server_logs: _Records,
    voice_id: str,
    path: str,
    raw: bytes,
) -> None:
    response = client.post(
        f"/v1/text-to-speech/{voice_id}{path}?output_format=pcm_22050",
        content=raw,
        headers={"content-type": "application/json"},
    )
    _assert_answer(response, raw, {"detail"})
