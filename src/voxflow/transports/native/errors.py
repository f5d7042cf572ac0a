"""The native protocol's error table: session error codes to its ``error`` event (no I/O).

The native protocol speaks the session's codes as they are, except the option codes that
docs/protocol.md documents as ``invalid_message`` ("a field of the wrong type or out of range"):
those fold into it, so a client's error handling does not change with each finer code the
session grows for other protocols.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from voxflow.session.errors import is_retryable
from voxflow.session.events import ErrorOut
from voxflow.transports.http_status import HttpError, http_status
from voxflow.transports.native import schema

__all__ = ["WIRE_CODES", "error_body", "http_error", "wire_code"]

WIRE_CODES: Mapping[str, str] = MappingProxyType(
    {
        "invalid_request": "invalid_message",
        "invalid_voice_settings": "invalid_message",
        "invalid_normalization": "invalid_message",
        "invalid_chunk_length_schedule": "invalid_message",
        "unknown_speaker": "invalid_message",
        "invalid_language": "invalid_message",
    }
)


def wire_code(code: str) -> str:
    """The native ``code`` for a session error code (any other code as it is)."""
    return WIRE_CODES.get(code, code)


def error_body(event: ErrorOut) -> dict[str, Any]:
    """The native ``error`` event for ``event`` (with ``retry_after_ms`` when the server is
    full)."""
    return schema.ERROR.encode(
        {
            "context_id": event.context_id,
            "code": wire_code(event.code),
            "message": event.message,
            "retryable": event.retryable,
            "retry_after_ms": None if event.retry_after_ms is None else round(event.retry_after_ms),
        }
    )


# The native HTTP routes' own statuses (``POST /v1/cache/prefetch``), over the shared ones.
HTTP_STATUS: Mapping[str, int] = MappingProxyType({"cache_disabled": 409, "prefetch_timeout": 504})


def http_error(code: str, message: str) -> HttpError:
    """A refused native HTTP request or handshake: ``{"error": {code, message, retryable}}``."""
    body = {"code": wire_code(code), "message": message, "retryable": is_retryable(code)}
    return HttpError(http_status(code, HTTP_STATUS), {"error": body})
