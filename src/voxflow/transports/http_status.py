"""The HTTP status of each session error code, shared by the HTTP protocols, and the value types
every protocol's error table returns (no I/O).

400 for a client's mistake and 500 for the server's, except where HTTP has a more precise word:
who the client is (401, 403), "not now" (429 at the cap, 503 starting or shutting down). A
protocol with statuses of its own (ElevenLabs' 404 for an unknown voice) puts them on top.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from voxflow.session.errors import is_server_fault

__all__ = ["HTTP_STATUS", "HttpError", "SocketError", "http_status"]

HTTP_STATUS: Mapping[str, int] = MappingProxyType(
    {
        "too_many_contexts": 429,
        "concurrency_limited": 429,
        "service_unavailable": 503,
        "shutting_down": 503,
        "unauthorized": 401,
        "forbidden_origin": 403,
        "forbidden_host": 403,
        "prefetch_queue_full": 429,
    }
)


def http_status(code: str, overrides: Mapping[str, int] = MappingProxyType({})) -> int:
    """The status for ``code``: the protocol's own, then the shared table, then 500 or 400."""
    default = 500 if is_server_fault(code) else 400
    return overrides.get(code, HTTP_STATUS.get(code, default))


@dataclass(frozen=True)
class HttpError:
    """A refused HTTP request in a protocol's shape: its status and JSON body."""

    status: int
    body: dict[str, Any]


@dataclass(frozen=True)
class SocketError:
    """An error on a WebSocket in a protocol's shape: the frame, then the close (None: the
    connection stays open)."""

    frame: dict[str, Any]
    close_code: int | None
