"""The close codes of every transport (RFC 6455's numbers), and the closes they share.

A TCP or HTTP transport has no close code of its own: it reads the same ``Close`` values (HTTP
ends its body properly only for a normal closure) so that the runner treats every connection
alike.
"""

from __future__ import annotations

from voxflow.connection.wire import Close

__all__ = [
    "FAILURE_CLOSE",
    "INTERNAL_ERROR",
    "MESSAGE_TOO_BIG",
    "NORMAL_CLOSURE",
    "POLICY_VIOLATION",
    "SERVICE_RESTART",
    "STALL_CLOSE",
    "TRY_AGAIN_LATER",
    "UNSUPPORTED_DATA",
]

NORMAL_CLOSURE = 1000
UNSUPPORTED_DATA = 1003  # a binary frame where a protocol takes JSON text only
POLICY_VIOLATION = 1008  # the client's fault: a refused message, a client that stopped reading
MESSAGE_TOO_BIG = 1009
INTERNAL_ERROR = 1011  # the server's fault
SERVICE_RESTART = 1012  # the server is shutting down: a client reconnects elsewhere
TRY_AGAIN_LATER = 1013  # the server is starting or full

# A client that stopped reading (its outbox filled, or one send outlasted the write timeout).
STALL_CLOSE = Close(POLICY_VIOLATION, "client stopped reading")
# A failure inside the server (a bug, logged).
FAILURE_CLOSE = Close(INTERNAL_ERROR, "internal error")
