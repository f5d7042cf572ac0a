"""The one thing ASGI cannot say: drop this connection now.

An adapter that must give up on a client (it stopped reading, or an answer failed half-way) can
only ask the server to *close*, and a close waits for the unsent bytes to drain: a client that
reads nothing holds its socket, and the audio buffered for it, for as long as it likes.
voxflow's server puts the connection's ``abort`` in every request's and WebSocket's scope under
``ABORT_EXTENSION`` (``server.http_protocol``, ``server.websocket_protocol``); another ASGI
server has none, and the adapters fall back to a close.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["ABORT_EXTENSION", "scope_abort"]

ABORT_EXTENSION = "voxflow.abort"  # scope["extensions"][ABORT_EXTENSION]["abort"]: () -> None


def scope_abort(scope: Any) -> Callable[[], None] | None:
    """The connection's abort, where the server gave one."""
    extension = (scope.get("extensions") or {}).get(ABORT_EXTENSION) or {}
    abort = extension.get("abort")
    return abort if callable(abort) else None
