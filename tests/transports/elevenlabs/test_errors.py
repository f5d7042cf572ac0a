"""ElevenLabs' error table: every session code has an HTTP answer and a WebSocket frame."""

from __future__ import annotations

import json

import pytest

from voxflow.session.errors import CODES, SessionError, is_retryable, is_server_fault
from voxflow.transports.close_codes import INTERNAL_ERROR, POLICY_VIOLATION, TRY_AGAIN_LATER
from voxflow.transports.elevenlabs.errors import http_error, socket_error
from voxflow.transports.elevenlabs.http import error_response


@pytest.mark.parametrize("code", sorted(CODES))
def test_every_code_has_an_http_answer(code: str) -> None:
    answer = http_error(code, "what happened")
    assert answer.body == {
        "detail": {"status": answer.body["detail"]["status"], "message": "what happened"}
    }
    assert isinstance(answer.body["detail"]["status"], str) and answer.body["detail"]["status"]
    if is_server_fault(code):
        assert answer.status in (500, 503)
    else:
        # A client's mistake, a refusal of who it is (401, 403), or "not now" (429, and 503
        # for a server shutting down: retry elsewhere).
        assert answer.status in (400, 401, 403, 404, 429, 503)
        assert answer.status != 503 or is_retryable(code)


@pytest.mark.parametrize("code", sorted(CODES))
def test_every_code_has_a_websocket_frame(code: str) -> None:
    error = socket_error(code, "what happened")
    assert set(error.frame) == {"message", "error", "code"}
    assert error.frame["message"] == "what happened"
    assert error.frame["error"] == http_error(code, "").body["detail"]["status"]
    # The frame's code is the close code, for the errors that close.
    assert error.close_code in (None, error.frame["code"])


@pytest.mark.parametrize(
    ("code", "status", "name"),
    [
        ("unknown_voice", 404, "voice_not_found"),
        ("unsupported_format", 400, "invalid_output_format"),
        ("text_too_long", 400, "max_character_limit_exceeded"),
        ("invalid_voice_settings", 400, "invalid_voice_settings"),
        ("invalid_normalization", 400, "invalid_request"),
        ("invalid_page_size", 400, "invalid_page_size"),
        ("too_many_contexts", 429, "max_active_conversations"),
        ("service_unavailable", 503, "service_unavailable"),
        ("encoding_failed", 500, "encoding_failed"),
        # A code the table does not know: the client's mistake, under its own name.
        ("made_up", 400, "made_up"),
    ],
)
def test_http_answers(code: str, status: int, name: str) -> None:
    answer = http_error(code, "m")
    assert (answer.status, answer.body["detail"]["status"]) == (status, name)


@pytest.mark.parametrize(
    ("code", "name", "frame_code", "close_code"),
    [
        ("invalid_json", "invalid_json", POLICY_VIOLATION, POLICY_VIOLATION),
        ("unknown_voice", "voice_not_found", POLICY_VIOLATION, POLICY_VIOLATION),
        ("too_many_contexts", "max_active_conversations", POLICY_VIOLATION, POLICY_VIOLATION),
        ("input_timeout_exceeded", "input_timeout_exceeded", POLICY_VIOLATION, POLICY_VIOLATION),
        # One segment is missing from the audio; the context and the connection go on.
        ("synthesis_failed", "synthesis_failed", INTERNAL_ERROR, None),
        ("encoding_failed", "encoding_failed", INTERNAL_ERROR, INTERNAL_ERROR),
        ("service_unavailable", "service_unavailable", TRY_AGAIN_LATER, TRY_AGAIN_LATER),
        ("made_up", "made_up", POLICY_VIOLATION, POLICY_VIOLATION),
    ],
)
def test_websocket_frames(code: str, name: str, frame_code: int, close_code: int | None) -> None:
    error = socket_error(code, "m")
    assert error.frame == {"message": "m", "error": name, "code": frame_code}
    assert error.close_code == close_code


def test_error_response_is_the_http_answer() -> None:
    response = error_response(SessionError("unknown_voice", "unknown voice 'x'"))
    assert response.status_code == 404
    assert json.loads(bytes(response.body)) == {
        "detail": {"status": "voice_not_found", "message": "unknown voice 'x'"}
    }
