"""Async client for the native WebSocket protocol (``WS /v1/stream``): the connection itself.

One ``VoxflowClient`` is one connection. Sending is a plain coroutine per message type (the
messages are built in ``messages.py``); receiving is done by a background reader task that parses
every server message into a typed event, stamps it with its arrival time (``time.monotonic()``)
and hands it to a ``ContextRouter`` (``routing.py``), which queues it under its context.
``events(context_id)`` iterates one context's events and ends after its ``done`` or
``cancelled``; errors that belong to no context go to ``errors()``.

When the connection goes away (or the client is closed) every iterator still waiting raises
``VoxflowConnectionError`` once the events that did arrive are taken; ``errors()`` just ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from urllib.parse import urlsplit, urlunsplit

from websockets.asyncio.client import ClientConnection
from websockets.asyncio.client import connect as ws_connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidURI

from voxflow.client.errors import VoxflowConnectionError
from voxflow.client.messages import (
    ErrorEvent,
    Event,
    cancel_message,
    encode,
    end_message,
    flush_message,
    parse_event,
    settings_message,
    start_message,
    text_message,
)
from voxflow.client.routing import ContextRouter

__all__ = ["MAX_MESSAGE_BYTES", "STREAM_PATH", "VoxflowClient", "stream_url"]

log = logging.getLogger(__name__)

STREAM_PATH = "/v1/stream"
# Server messages carry base64 audio of whole windows; a few seconds at 48 kHz pass the websockets
# default of 1 MiB, and a client that drops the connection over that would look like a server bug.
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
# How long aclose() waits for the reader to see the close handshake end before cancelling it.
_READER_CLOSE_WAIT_S = 2.0


def stream_url(url: str) -> str:
    """The ``/v1/stream`` WebSocket URL for a server URL.

    ``http://host:port`` (or ``ws://host:port``) becomes ``ws://host:port/v1/stream``, ``https``
    becomes ``wss``; a URL that already has a path is kept as it is.
    """
    parts = urlsplit(url)
    scheme = {"http": "ws", "https": "wss"}.get(parts.scheme, parts.scheme)
    if scheme not in ("ws", "wss"):
        raise ValueError(f"expected an http(s) or ws(s) URL, got {url!r}")
    path = parts.path if parts.path not in ("", "/") else STREAM_PATH
    return urlunsplit((scheme, parts.netloc, path, parts.query, ""))


class VoxflowClient:
    """One connection to ``/v1/stream``. Open it with ``async with VoxflowClient.connect(url)``."""

    def __init__(self, websocket: ClientConnection, url: str) -> None:
        self._ws = websocket
        self._url = url
        self._router = ContextRouter()
        self._close_reason: str | None = None
        self._closing = False
        self._reader = asyncio.create_task(self._read_loop(), name="voxflow-client-reader")

    @classmethod
    @asynccontextmanager
    async def connect(
        cls, url: str, *, open_timeout: float = 10.0, ping_interval: float | None = None
    ) -> AsyncIterator[VoxflowClient]:
        """Open a connection; closed (reader task included) when the ``async with`` exits.

        Keepalive pings are off by default: the server notices a dead client by its own write
        timeout, and a ping task would only add work next to latency measurements.
        """
        try:
            websocket = await ws_connect(
                url,
                open_timeout=open_timeout,
                ping_interval=ping_interval,
                max_size=MAX_MESSAGE_BYTES,
                # Base64 PCM barely compresses; deflate would only cost CPU on both ends.
                compression=None,
            )
        except (OSError, TimeoutError, InvalidHandshake, InvalidURI) as error:
            raise VoxflowConnectionError(f"cannot connect to {url}: {error}") from error
        client = cls(websocket, url)
        try:
            yield client
        finally:
            await client.aclose()

    # -- state -----------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        return self._url

    @property
    def closed(self) -> bool:
        return self._close_reason is not None

    @property
    def close_reason(self) -> str | None:
        return self._close_reason

    # -- sending ---------------------------------------------------------------------------------
    # Every send returns time.monotonic() taken just before the frame went to the socket: the
    # reference point for client-side latencies.

    async def start(
        self,
        context_id: str,
        *,
        voice: str | None = None,
        output_format: str = "pcm_24000",
        speed: float | None = None,
        seed: int | None = None,
        chunk_length_schedule: Sequence[int] | None = None,
        auto_mode: bool | None = None,
        text_format: str | None = None,
        volume: float | None = None,
        sentence_pause_ms: float | None = None,
        language: str | None = None,
    ) -> float:
        return await self.send_message(
            start_message(
                context_id,
                voice=voice,
                output_format=output_format,
                speed=speed,
                seed=seed,
                chunk_length_schedule=chunk_length_schedule,
                auto_mode=auto_mode,
                text_format=text_format,
                volume=volume,
                sentence_pause_ms=sentence_pause_ms,
                language=language,
            )
        )

    async def settings(
        self,
        context_id: str,
        *,
        speed: float | None = None,
        volume: float | None = None,
        sentence_pause_ms: float | None = None,
    ) -> float:
        """Change the context's speed, volume or pause after a sentence for what follows."""
        return await self.send_message(
            settings_message(
                context_id, speed=speed, volume=volume, sentence_pause_ms=sentence_pause_ms
            )
        )

    async def send_text(self, context_id: str, text: str) -> float:
        return await self.send_message(text_message(context_id, text))

    async def flush(self, context_id: str) -> float:
        return await self.send_message(flush_message(context_id))

    async def end(self, context_id: str) -> float:
        return await self.send_message(end_message(context_id))

    async def cancel(self, context_id: str, played_ms: float | None = None) -> float:
        return await self.send_message(cancel_message(context_id, played_ms))

    async def send_message(self, message: Mapping[str, object]) -> float:
        """Send any protocol message as it is (for fields or types this client does not know)."""
        if self._close_reason is not None:
            raise VoxflowConnectionError(self._close_reason)
        data = encode(message)
        sent_at = time.monotonic()
        try:
            await self._ws.send(data)
        except ConnectionClosed as error:
            raise VoxflowConnectionError(f"connection lost: {error}") from error
        return sent_at

    # -- receiving -------------------------------------------------------------------------------

    def events(self, context_id: str) -> AsyncIterator[Event]:
        """The events of ``context_id``'s oldest unfinished use, ending after done/cancelled.

        Iterate each use once, from one task. Raises ``VoxflowConnectionError`` if the connection
        ends before the terminal event arrived.
        """
        return self._router.events(context_id)

    def pending(self, context_id: str) -> tuple[Event, ...]:
        """Take the events of ``context_id`` that have arrived and nobody has taken, at once."""
        return self._router.pending(context_id)

    def errors(self) -> AsyncIterator[ErrorEvent]:
        """Errors about the connection rather than a context; ends when the connection does."""
        return self._router.errors()

    async def _read_loop(self) -> None:
        reason = "connection closed"
        try:
            async for raw in self._ws:
                received_at = time.monotonic()
                if not isinstance(raw, str):
                    log.warning("ignoring a binary frame from the server (%d bytes)", len(raw))
                    continue
                try:
                    event = parse_event(raw, received_at)
                except ValueError as error:
                    log.warning("ignoring a malformed server message: %s", error)
                    continue
                self._router.route(event)
            reason = f"connection closed by the server (code {self._ws.close_code})"
        except ConnectionClosed as error:
            reason = f"connection lost: {error}"
        except Exception as error:
            log.exception("voxflow client reader failed")
            reason = f"client reader failed: {error!r}"
        finally:
            self._shutdown("client closed" if self._closing else reason)

    def _shutdown(self, reason: str) -> None:
        if self._close_reason is not None:
            return
        self._close_reason = reason
        self._router.close(reason)

    async def aclose(self) -> None:
        """Close the connection and stop the reader (idempotent)."""
        self._closing = True
        try:
            with contextlib.suppress(Exception):
                await self._ws.close()
        finally:
            if not self._reader.done():
                # The reader normally ends as soon as the close handshake does.
                await asyncio.wait({self._reader}, timeout=_READER_CLOSE_WAIT_S)
            if not self._reader.done():
                self._reader.cancel()
            try:
                await self._reader
            except asyncio.CancelledError:
                current = asyncio.current_task()
                if current is not None and current.cancelling():
                    raise
            self._shutdown("client closed")
