"""OpenAI's error table: every session code has an error object and a status."""

from __future__ import annotations

import json

import pytest

from voxflow.session.errors import CODES, SessionError, is_retryable, is_server_fault
from voxflow.transports.openai.errors import error_type, openai_error
from voxflow.transports.openai.http import error_response


@pytest.mark.parametrize("code", sorted(CODES))
def test_every_code_has_an_error_object(code: str) -> None:
    answer = openai_error(code, "what happened")
    error = answer.body["error"]
    assert set(answer.body) == {"error"}
    assert set(error) == {"message", "type", "param", "code"}
    assert (error["message"], error["code"]) == ("what happened", code)
    if is_server_fault(code):
        assert answer.status in (500, 503) and error["type"] == "server_error"
    else:
        # A client's mistake, a refusal of who it is (401, 403), or "not now" (429, and 503 for
        # a server shutting down: retry elsewhere).
        assert answer.status in (400, 401, 403, 429, 503)
        assert answer.status != 503 or is_retryable(code)
        assert error["type"] == error_type(answer.status)


@pytest.mark.parametrize(
    ("code", "status", "kind", "param"),
    [
        # OpenAI answers a voice it does not have with 400, and so do we.
        ("unknown_voice", 400, "invalid_request_error", "voice"),
        ("unsupported_format", 400, "invalid_request_error", "response_format"),
        ("text_too_long", 400, "invalid_request_error", "input"),
        ("invalid_voice_settings", 400, "invalid_request_error", None),
        ("too_many_contexts", 429, "rate_limit_error", None),
        ("synthesis_failed", 500, "server_error", None),
        ("service_unavailable", 503, "server_error", None),
        ("made_up", 400, "invalid_request_error", None),
    ],
)
def test_error_objects(code: str, status: int, kind: str, param: str | None) -> None:
    answer = openai_error(code, "m")
    assert answer.status == status
    assert answer.body == {"error": {"message": "m", "type": kind, "param": param, "code": code}}


def test_error_response_is_the_error_object() -> None:
    response = error_response(SessionError("unsupported_format", "unsupported response_format"))
    assert response.status_code == 400
    assert json.loads(bytes(response.body))["error"] == {
        "message": "unsupported response_format",
        "type": "invalid_request_error",
        "param": "response_format",
        "code": "unsupported_format",
    }
