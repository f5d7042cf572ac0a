"""The one exception the native WebSocket client raises about its connection.

It has a module of its own because both the connection (``client.py``) and the per-context event
queues (``routing.py``) raise it, and neither should import the other for it.
"""

from __future__ import annotations


class VoxflowConnectionError(ConnectionError):
    """The connection could not be opened, was lost, or the client was closed."""
