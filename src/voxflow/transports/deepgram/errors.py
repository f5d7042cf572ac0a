"""Deepgram's error shapes for the session's error codes (no I/O).

Over HTTP (``POST /v1/speak`` and a refused WebSocket handshake) an error is Deepgram's REST
object, ``{"err_code": ..., "err_msg": ..., "request_id": ...}``, with an HTTP status; a refused
handshake also carries the message in the ``dg-error`` header, where Deepgram puts it (Pipecat
reads it from there). On an open WebSocket Deepgram reports a fatal problem with a close frame
whose code says what kind it is; voxflow sends an ``{"type": "Error", "code": ...,
"description": ...}`` message first (the shape of Deepgram's other ``Error`` messages), so the
reason is readable by clients that ignore close reasons. A problem the connection survives (a
segment that failed to synthesize, a Flush over the rate limit) is a ``Warning`` message instead,
with both spellings of its fields that clients read (``description``/``code`` from the API
schema, ``warn_msg``/``warn_code`` read by Pipecat and LiveKit).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from voxflow.session.errors import is_server_fault
from voxflow.transports.close_codes import (
    INTERNAL_ERROR,
    MESSAGE_TOO_BIG,
    POLICY_VIOLATION,
    SERVICE_RESTART,
    TRY_AGAIN_LATER,
)
from voxflow.transports.http_status import HttpError, SocketError, http_status

__all__ = [
    "NAMES",
    "WARNINGS",
    "error_name",
    "http_error",
    "socket_error",
    "warning",
]

# Deepgram's error code names, where it has one for a session code; the rest are the session's
# code in upper case (``error_name``).
NAMES: Mapping[str, str] = MappingProxyType(
    {
        "invalid_json": "UNPARSABLE_CLIENT_MESSAGE",
        "invalid_message": "UNPARSABLE_CLIENT_MESSAGE",
        "unknown_type": "UNPARSABLE_CLIENT_MESSAGE",
        "invalid_request": "INVALID_QUERY_PARAMETER",
        "unsupported_format": "INVALID_QUERY_PARAMETER",
        "invalid_voice_settings": "INVALID_QUERY_PARAMETER",
        "unknown_voice": "INVALID_QUERY_PARAMETER",
        "unsupported_language": "INVALID_QUERY_PARAMETER",  # an Aura model no voice speaks
        "text_too_long": "INPUT_TOO_LONG",
        "concurrency_limited": "TOO_MANY_REQUESTS",
        "unauthorized": "INVALID_AUTH",
        "synthesis_failed": "INTERNAL_SERVER_ERROR",
        "encoding_failed": "INTERNAL_SERVER_ERROR",
    }
)

# WebSocket close codes other than the defaults (1008 the client's fault, 1011 the server's).
_SOCKET_CODES: Mapping[str, int] = MappingProxyType(
    {
        "text_too_long": MESSAGE_TOO_BIG,
        "service_unavailable": TRY_AGAIN_LATER,
        "concurrency_limited": TRY_AGAIN_LATER,
        "shutting_down": SERVICE_RESTART,
    }
)

# Problems the connection survives: reported as a ``Warning`` message, with no close.
WARNINGS = frozenset({"synthesis_failed"})


def error_name(code: str) -> str:
    """Deepgram's name for a session error code."""
    return NAMES.get(code, code.upper())


def http_error(code: str, message: str, request_id: str) -> HttpError:
    """Deepgram's REST error object for ``code``."""
    return HttpError(
        http_status(code),
        {"err_code": error_name(code), "err_msg": message, "request_id": request_id},
    )


def warning(code: str, message: str) -> dict[str, Any]:
    """A ``Warning`` message: the connection goes on."""
    return {
        "type": "Warning",
        "code": code,
        "description": message,
        "warn_code": code,
        "warn_msg": message,
    }


def socket_error(code: str, message: str) -> SocketError:
    """The message for a session error on the WebSocket, and the close that follows it."""
    if code in WARNINGS:
        return SocketError(warning(error_name(code), message), None)
    default = INTERNAL_ERROR if is_server_fault(code) else POLICY_VIOLATION
    frame = {"type": "Error", "code": error_name(code), "description": message}
    return SocketError(frame, _SOCKET_CODES.get(code, default))
