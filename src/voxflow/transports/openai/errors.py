"""OpenAI's error object for the session's error codes (no I/O).

``{"error": {"message": ..., "type": ..., "param": ..., "code": ...}}``: OpenAI's SDKs raise it
as ``BadRequestError`` and friends, by HTTP status, and show the message. ``param`` names the
request field at fault, where one is; ``code`` is the session's code.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from voxflow.transports.http_status import http_status

__all__ = ["PARAMS", "OpenAIError", "error_type", "openai_error"]

# The request field each code blames (``POST /v1/audio/speech``'s names).
PARAMS: Mapping[str, str] = MappingProxyType(
    {
        "unknown_voice": "voice",
        "unknown_speaker": "voice",
        "unsupported_voice": "voice",
        "unsupported_format": "response_format",
        "text_too_long": "input",
        "unsupported_text_format": "text_format",
        "invalid_ssml": "input",
    }
)


@dataclass(frozen=True)
class OpenAIError:
    status: int
    body: dict[str, Any]


def error_type(status: int) -> str:
    """OpenAI's ``type`` for an HTTP status."""
    if status >= 500:
        return "server_error"
    if status == 429:
        return "rate_limit_error"
    return "invalid_request_error"


def openai_error(code: str, message: str, param: str | None = None) -> OpenAIError:
    """OpenAI's error for ``code``; ``param`` names the field at fault when the caller knows it
    (a body field of the wrong type), else the code's (``PARAMS``)."""
    status = http_status(code)  # OpenAI answers a voice it does not have with 400 too
    return OpenAIError(
        status,
        {
            "error": {
                "message": message,
                "type": error_type(status),
                "param": param or PARAMS.get(code),
                "code": code,
            }
        },
    )
