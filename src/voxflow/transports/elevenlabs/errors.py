"""ElevenLabs' error shapes for the session's error codes (no I/O).

Over HTTP an error is ``{"detail": {"status": <name>, "message": ...}}`` with an HTTP status; over
the WebSocket it is one frame, ``{"message": ..., "error": <name>, "code": <close code>}``, and
then a close with that code, as ElevenLabs does. Both use the same names: the session's code where
ElevenLabs has no name of its own for it (``NAMES`` lists the ones it has).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from voxflow.session.errors import is_server_fault
from voxflow.transports.close_codes import (
    INTERNAL_ERROR,
    POLICY_VIOLATION,
    SERVICE_RESTART,
    TRY_AGAIN_LATER,
)
from voxflow.transports.http_status import HttpError, SocketError, http_status

__all__ = [
    "HTTP_STATUS",
    "KEEPS_CONNECTION",
    "NAMES",
    "SOCKET_CODES",
    "error_name",
    "http_error",
    "socket_error",
]

# The session's codes that ElevenLabs spells its own way.
NAMES: Mapping[str, str] = MappingProxyType(
    {
        "unknown_voice": "voice_not_found",
        "unsupported_format": "invalid_output_format",
        "text_too_long": "max_character_limit_exceeded",
        "too_many_contexts": "max_active_conversations",
        "concurrency_limited": "too_many_concurrent_requests",
        "invalid_normalization": "invalid_request",
        "unauthorized": "invalid_api_key",
    }
)

# ElevenLabs' own statuses, over the shared ones (``transports.http_status``).
HTTP_STATUS: Mapping[str, int] = MappingProxyType(
    {"unknown_voice": 404, "unknown_dictionary": 404, "dictionaries_disabled": 404}
)

# WebSocket codes other than the defaults: 1008 for the client's mistakes, 1011 for the server's.
SOCKET_CODES: Mapping[str, int] = MappingProxyType(
    {
        "service_unavailable": TRY_AGAIN_LATER,
        "concurrency_limited": TRY_AGAIN_LATER,
        "shutting_down": SERVICE_RESTART,
    }
)

# Errors after which the connection goes on: a failed segment is missing from the audio, and the
# context speaks the next one.
KEEPS_CONNECTION = frozenset({"synthesis_failed"})


def error_name(code: str) -> str:
    """ElevenLabs' name for a session error code."""
    return NAMES.get(code, code)


def http_error(code: str, message: str) -> HttpError:
    return HttpError(
        http_status(code, HTTP_STATUS),
        {"detail": {"status": error_name(code), "message": message}},
    )


def socket_error(code: str, message: str) -> SocketError:
    default = INTERNAL_ERROR if is_server_fault(code) else POLICY_VIOLATION
    close_code = SOCKET_CODES.get(code, default)
    return SocketError(
        {"message": message, "error": error_name(code), "code": close_code},
        None if code in KEEPS_CONNECTION else close_code,
    )
