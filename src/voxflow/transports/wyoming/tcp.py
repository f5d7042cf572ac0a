"""The asyncio TCP adapter: one Wyoming client's stream as a ``Transport`` for the runner.

It moves events and nothing else; the protocol decides what they mean and the runner decides when
the connection ends. A malformed event is handed on as its ``BadEvent``, to be answered in order;
after a fatal one the byte stream cannot be read past it, so ``receive`` reports the end.
"""

from __future__ import annotations

import asyncio
import logging
import warnings

from voxflow.connection.gateway import Gateway
from voxflow.connection.runner import run_connection
from voxflow.connection.wire import Close, PeerGone, Transport
from voxflow.transports.wyoming.framing import (
    DEFAULT_FRAME_LIMITS,
    BadEvent,
    FrameLimits,
    read_event,
)
from voxflow.transports.wyoming.protocol import WyomingFrame, WyomingProtocol

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", "'audioop' is deprecated", DeprecationWarning)
    from wyoming.event import Event, async_write_event

__all__ = ["serve_wyoming", "tcp_transport"]

log = logging.getLogger(__name__)

CLOSE_WAIT_S = 1.0  # below the runner's teardown bound, so an unread socket is aborted in time


async def serve_wyoming(
    gateway: Gateway,
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    limits: FrameLimits = DEFAULT_FRAME_LIMITS,
) -> None:
    """Serve one Wyoming client until the connection ends; the socket is closed on return."""
    driver = gateway.new_driver("wyoming", None)
    protocol = WyomingProtocol(driver.session, driver.now, gateway.context)
    try:
        await run_connection(
            driver, protocol, tcp_transport(reader, writer, limits), gateway.runner_settings
        )
    finally:
        # The runner closes the transport only when a reply or a stall asks it to; a peer that
        # left (or a cancelled server) still holds a socket here.
        await close_writer(writer)


def tcp_transport(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    limits: FrameLimits = DEFAULT_FRAME_LIMITS,
) -> Transport[WyomingFrame, Event]:
    """The events of one accepted TCP connection."""
    ended = False

    async def receive() -> WyomingFrame | None:
        nonlocal ended
        if ended:
            return None
        try:
            return await read_event(reader, limits)
        except BadEvent as error:
            ended = error.fatal
            return error
        except ConnectionError:
            return None  # reset by the peer

    async def send(event: Event) -> None:
        if writer.is_closing():
            # Closed under the runner (a stalled reader aborted): writing would raise out of
            # the transport rather than fail as a lost peer.
            raise PeerGone("the connection is closed")
        try:
            await async_write_event(event, writer)
        except ConnectionError as error:  # reset, or a broken pipe
            raise PeerGone(str(error)) from error

    async def close(_: Close) -> None:
        await close_writer(writer)

    return Transport(receive, send, close)


async def close_writer(writer: asyncio.StreamWriter) -> None:
    """Close the socket, flushing what is written; abort it when the flush does not end in time
    (a client that stopped reading would hold it open forever). Idempotent."""
    writer.close()
    try:
        async with asyncio.timeout(CLOSE_WAIT_S):
            await writer.wait_closed()
    except TimeoutError:
        log.debug("aborting a Wyoming connection whose peer does not read")
        writer.transport.abort()
    except ConnectionError as error:
        log.debug("Wyoming connection reset as it closed: %s", error)  # closed all the same
