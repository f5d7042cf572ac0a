"""uvicorn's server with a graceful drain on SIGTERM.

uvicorn on SIGTERM stops accepting and closes every WebSocket at once with 1012, then waits for
HTTP answers with no bound other than its graceful-shutdown timeout. voxflow drains first:

1. admit no new stream: ``/readyz`` answers 503 so a load balancer steers away, and a client
   that still comes gets a clear refusal (HTTP 503, a ``shutting_down`` error) rather than a
   refused connection, so the listeners stay open;
2. let the admitted streams finish, for up to ``drain_s``;
3. end every connection still open with its protocol's last words (native ``error`` +
   close 1012, ElevenLabs' error frame + close 1012, an HTTP answer cut, Wyoming ``error``),
   each bounded by the runner's ``final_message_s`` and ``teardown_s``; the drain returns once
   every one of them is out (or past its bound);
4. then uvicorn's own shutdown (it stops listening and closes what is left with 1012, after its
   last words), and the process exits.

A second SIGTERM, or SIGINT, skips the rest (uvicorn's behaviour).
"""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Awaitable, Callable, Sequence
from socket import socket
from types import FrameType

import uvicorn

__all__ = ["DrainingServer"]

log = logging.getLogger(__name__)

Drain = Callable[[float], Awaitable[None]]


class DrainingServer(uvicorn.Server):
    def __init__(
        self,
        config: uvicorn.Config,
        drain: Callable[[], Drain | None],
        drain_s: float,
        on_started: Callable[[], object] | None = None,
    ):
        """``drain()`` gives the app's drain once it has started (None before); ``on_started``
        runs once the app has started and the server listens."""
        super().__init__(config)
        self._drain = drain
        self._drain_s = drain_s
        self._on_started = on_started
        self._loop: asyncio.AbstractEventLoop | None = None
        self._draining: asyncio.Task[None] | None = None

    async def startup(self, sockets: list[socket] | None = None) -> None:
        await super().startup(sockets)
        if self._on_started is not None and not self.should_exit:
            self._on_started()

    async def serve(self, sockets: Sequence[socket] | None = None) -> None:
        self._loop = asyncio.get_running_loop()
        await super().serve(list(sockets) if sockets is not None else None)

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        drain = self._drain()
        if sig != signal.SIGTERM or self._draining is not None or drain is None or not self._loop:
            super().handle_exit(sig, frame)
            return
        # A signal handler runs between two bytecodes of whatever the loop was doing: hand the
        # drain to the loop rather than start it here.
        self._loop.call_soon_threadsafe(self._begin, drain)

    def _begin(self, drain: Drain) -> None:
        if self._draining is None and self._loop is not None:
            self._draining = self._loop.create_task(self._run(drain), name="voxflow-drain")

    async def _run(self, drain: Drain) -> None:
        log.info("SIGTERM: draining for up to %.1f s", self._drain_s)
        try:
            await drain(self._drain_s)
        finally:
            self.should_exit = True  # uvicorn's shutdown: nothing should be left to wait for
