"""The HTTP connection limits one server runs with, and the bookkeeping its cap needs.

``HttpLimits`` is what ``server.http_protocol.LimitedHttpProtocol`` enforces (built from
``ServerSettings`` once, in ``server.uvicorn_config``). ``ConnectionGate`` belongs to one server:
past the cap it finds, oldest first and in O(1), an idle keep-alive connection to close for a new
one, or a reserve connection still waiting for its request head to give way to a new one (so a
flood of silent sockets cannot hold the health checks' reserve).
"""

from __future__ import annotations

import logging
import resource
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Protocol

from voxflow.config import ServerSettings

__all__ = [
    "FD_HEADROOM",
    "RESERVED_PATHS",
    "ConnectionGate",
    "HttpLimits",
    "derive_max_connections",
    "open_file_limit",
    "raise_open_file_limit",
]

log = logging.getLogger(__name__)

# Paths a connection past the cap may still ask for: an orchestrator's probes and the scraper
# must see an overloaded server as alive (and why it is not ready), not as dead.
RESERVED_PATHS = frozenset({"/healthz", "/readyz", "/metrics"})
# Files the process keeps open besides HTTP connections: voices and models, logs, the event
# loop's own descriptors, worker threads, the listeners and Wyoming's clients.
FD_HEADROOM = 64
# What the open-file limit counts as when it has none (the cap is then a formality).
_UNLIMITED_FILES = 1 << 20


@dataclass(frozen=True)
class HttpLimits:
    header_timeout_s: float = 10.0
    body_timeout_s: float = 30.0
    keepalive_timeout_s: float = 5.0
    max_header_bytes: int = 64 << 10
    max_body_bytes: int = 1 << 20
    max_connections: int = 1024 - FD_HEADROOM - 32
    health_reserve: int = 32
    reserved_paths: frozenset[str] = RESERVED_PATHS
    # After a refusal the connection is read (and the bytes dropped) this long before it is
    # closed: closing a socket with unread input resets it, and the reset can destroy the answer
    # before a client still sending its body has read it (a "lingering close", as nginx does).
    linger_s: float = 2.0

    @classmethod
    def from_settings(cls, settings: ServerSettings, fd_limit: int | None = None) -> HttpLimits:
        """The settings' limits; ``max_connections=0`` becomes what ``fd_limit`` (default: the
        process's open-file limit now) leaves room for."""
        max_connections = settings.max_connections or derive_max_connections(
            open_file_limit() if fd_limit is None else fd_limit, settings.health_reserve
        )
        return cls(
            header_timeout_s=settings.header_timeout_s,
            body_timeout_s=settings.body_timeout_s,
            keepalive_timeout_s=settings.keepalive_timeout_s,
            max_header_bytes=settings.max_header_bytes,
            max_body_bytes=settings.max_body_bytes,
            max_connections=max_connections,
            health_reserve=settings.health_reserve,
        )


def derive_max_connections(fd_limit: int, health_reserve: int) -> int:
    """The connections ``fd_limit`` descriptors hold with the health reserve and the process's own
    files left over (at least one)."""
    return max(1, fd_limit - health_reserve - FD_HEADROOM)


def open_file_limit() -> int:
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return _UNLIMITED_FILES if soft == resource.RLIM_INFINITY else soft


def raise_open_file_limit() -> int:
    """Raise the soft open-file limit to the hard one (what an unprivileged process may do; the
    soft default, often 1,024, is what a thousand idle sockets exhausted). Returns the limit in
    force afterwards."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != soft:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        except (ValueError, OSError) as error:  # e.g. macOS refuses an unlimited soft limit
            log.warning("could not raise the open-file limit from %d: %s", soft, error)
        else:
            log.info("open-file limit raised from %d to %s", soft, hard)
    return open_file_limit()


class Evictable(Hashable, Protocol):
    def evict(self) -> None:
        """Close the connection now (it is idle, or has not sent a request head)."""


class ConnectionGate:
    """One server's connections that may be closed to make room, each kind oldest first.

    ``idle``: keep-alive connections between requests (a client retries those on a new
    connection). ``waiting``: connections let in past the cap, for the health paths only, that
    have not sent their request head yet. Dicts keep insertion order, so the first is the oldest.
    """

    def __init__(self, on_refused: Callable[[str], None] = lambda _reason: None) -> None:
        self.idle: dict[Evictable, None] = {}
        self.waiting: dict[Evictable, None] = {}
        # Every refusal, by reason (``voxflow_rejected_total{reason}`` on the app's /metrics).
        self.on_refused = on_refused
        self.refused = 0  # connections and requests turned away by the cap
        self.at_cap = False  # for logging a warning once per episode, not once per refusal

    def forget(self, connection: Evictable) -> None:
        self.idle.pop(connection, None)
        self.waiting.pop(connection, None)

    def evict_idle(self) -> bool:
        return self._evict(self.idle)

    def evict_waiting(self) -> bool:
        return self._evict(self.waiting)

    def refusal(self, connections: int, limit: int) -> None:
        self.refused += 1
        if not self.at_cap:
            self.at_cap = True
            log.warning(
                "%d connections, past the cap of %d: refusing all but health checks",
                connections,
                limit,
            )

    def admitted(self) -> None:
        if self.at_cap:
            self.at_cap = False
            log.info("connections back under the cap")

    @staticmethod
    def _evict(connections: dict[Evictable, None]) -> bool:
        if not connections:
            return False
        oldest = next(iter(connections))
        del connections[oldest]
        oldest.evict()
        return True
