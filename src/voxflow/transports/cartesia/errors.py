"""Cartesia's error shapes for the session's error codes (no I/O).

Cartesia (``Cartesia-Version: 2026-03-01`` and later) answers an HTTP error with
``{"error_code", "title", "message"}`` and an HTTP status, and reports a WebSocket error as one
event, ``{"type": "error", "context_id", "done": true, "status_code", "error_code", "title",
"message"}``; the socket stays open. Its older clients print an ``error`` string
(``"Title: message"``), so the event carries that too. ``error_code`` is Cartesia's name where it
has one for the same thing (``NAMES``), else the session's code.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from voxflow.transports.http_status import HttpError, http_status

__all__ = ["HTTP_STATUS", "NAMES", "TITLES", "error_name", "http_error", "socket_error", "title"]

# The session's codes that Cartesia spells its own way (its documented ``error_code`` values).
NAMES: Mapping[str, str] = MappingProxyType(
    {
        "unknown_voice": "voice_not_found",
        "invalid_json": "invalid_request",
        "invalid_message": "invalid_request",
        "unauthorized": "invalid_api_key",
    }
)

# Short summaries, as Cartesia's ``title``; other codes get one made from the code itself.
TITLES: Mapping[str, str] = MappingProxyType(
    {
        "invalid_json": "Invalid JSON",
        "invalid_message": "Invalid request",
        "invalid_request": "Invalid request",
        "unknown_voice": "Voice not found",
        "unsupported_format": "Invalid output format",
        "invalid_voice_settings": "Invalid generation config",
        "text_too_long": "Transcript too long",
        "too_many_contexts": "Too many contexts",
        "concurrency_limited": "Too many concurrent requests",
        "context_closing": "Context is closing",
        "synthesis_failed": "Generation failed",
        "encoding_failed": "Encoding failed",
        "service_unavailable": "Service unavailable",
        "shutting_down": "Service restarting",
    }
)

# Cartesia's own statuses, over the shared ones (``transports.http_status``).
HTTP_STATUS: Mapping[str, int] = MappingProxyType(
    {"unknown_voice": 404, "unknown_dictionary": 404, "dictionaries_disabled": 404}
)


def error_name(code: str) -> str:
    """Cartesia's ``error_code`` for a session error code."""
    return NAMES.get(code, code)


def title(code: str) -> str:
    return TITLES.get(code) or code.replace("_", " ").capitalize()


def http_error(code: str, message: str) -> HttpError:
    """The body and status of a refused HTTP request."""
    return HttpError(
        http_status(code, HTTP_STATUS),
        {"error_code": error_name(code), "title": title(code), "message": message},
    )


def socket_error(context_id: str | None, code: str, message: str) -> dict[str, Any]:
    """The WebSocket error event. ``context_id`` is always present (``null`` for an error of
    the connection): Pipecat reads it from every message."""
    summary = title(code)
    return {
        "type": "error",
        "context_id": context_id,
        "done": True,
        "status_code": http_status(code, HTTP_STATUS),
        "error_code": error_name(code),
        "title": summary,
        "message": message,
        "error": f"{summary}: {message}",
    }
