"""The Wyoming TCP listener: each client served on the connection runner (``tcp``), all ended on
``close()``."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from voxflow.connection.gateway import Gateway
from voxflow.transports.wyoming.framing import DEFAULT_FRAME_LIMITS, FrameLimits
from voxflow.transports.wyoming.info import parse_wyoming_uri
from voxflow.transports.wyoming.tcp import serve_wyoming

__all__ = ["WyomingServerHandle", "start_wyoming_server"]

log = logging.getLogger(__name__)


class WyomingServerHandle:
    """A listening Wyoming server: ``port`` it is bound to and ``close()``."""

    def __init__(self, gateway: Gateway, limits: FrameLimits) -> None:
        self._gateway = gateway
        self._limits = limits
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[Any]] = set()
        self._closing = False

    @property
    def port(self) -> int:
        """The bound port (of the first socket, when a host name resolved to several)."""
        if self._server is None or not self._server.sockets:
            raise RuntimeError("the Wyoming server is not listening")
        return int(self._server.sockets[0].getsockname()[1])

    async def _listen(self, host: str, port: int) -> None:
        self._server = await asyncio.start_server(self._serve, host, port, limit=self._limits.line)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if self._closing or task is None:
            writer.close()
            return
        self._connections.add(task)
        try:
            await serve_wyoming(self._gateway, reader, writer, self._limits)
        except asyncio.CancelledError:
            # close() cancels connections, and the connection has cleaned up after itself. On
            # 3.11 asyncio's own done-callback for this task calls task.exception(), which raises
            # (and logs an error) for a cancelled task, so the task ends normally instead.
            pass
        finally:
            self._connections.discard(task)

    async def close(self) -> None:
        """Stop listening, end every connection (their work stops) and wait for them."""
        self._closing = True
        if self._server is not None:
            self._server.close()
        connections = list(self._connections)
        for task in connections:
            task.cancel()
        await asyncio.gather(*connections, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()


async def start_wyoming_server(
    gateway: Gateway, uri: str, limits: FrameLimits = DEFAULT_FRAME_LIMITS
) -> WyomingServerHandle:
    """Listen for Wyoming clients on ``uri`` (``tcp://HOST:PORT``; port 0 picks a free one)."""
    host, port = parse_wyoming_uri(uri)
    handle = WyomingServerHandle(gateway, limits)
    await handle._listen(host, port)
    log.info("Wyoming server listening on %s:%d", host, handle.port)
    return handle
