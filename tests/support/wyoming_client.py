"""Running a Wyoming server for one test and talking to it with the wyoming package's client."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TypeVar

import numpy as np
from wyoming.client import AsyncTcpClient
from wyoming.event import Event

from tests.support.wyoming_messages import (
    AudioChunk,
    AudioStart,
    Synthesize,
    SynthesizeVoice,
)
from voxflow.server.app import wyoming_limits
from voxflow.server.services import Services
from voxflow.transports.wyoming.server import WyomingServerHandle, start_wyoming_server

T = TypeVar("T")
TIMEOUT_S = 120.0  # fail-safe for a hung test, not a performance bound
SETTLE_S = 30.0  # fail-safe for "work has stopped" polling

# One sentence, no inner full stop: more than one chunk means audio goes out as it is rendered.
LONG_SENTENCE = (
    "The quick brown fox jumps over the lazy dog while the orchestra, tuning its instruments "
    "in the distance, prepares for a long evening of music that nobody will forget"
)
STREAMED = (
    "Good evening, and welcome to the show. Tonight we will talk about the weather, the "
    "harvest, and the long road that brought all of us here. Please stay with us until the end."
)
# About a minute of speech: the scheduler keeps at most max_lead_s (20 s) of audio ahead of the
# client, so finishing it would take this stream well over half a minute of wall time.
VERY_LONG = " ".join([LONG_SENTENCE + "."] * 8)


def serve(services: Services, body: Callable[[WyomingServerHandle], Awaitable[T]]) -> T:
    """Run ``body`` against a fresh server on a free port, with the limits of ``services``'
    settings; check nothing is left running."""

    async def main() -> T:
        limits = wyoming_limits(services.settings)
        handle = await start_wyoming_server(services.gateway(), "tcp://127.0.0.1:0", limits)
        try:
            result = await asyncio.wait_for(body(handle), TIMEOUT_S)
        finally:
            await handle.close()
        leaked = asyncio.all_tasks() - {asyncio.current_task()}
        assert not leaked, f"tasks left running after close(): {leaked}"
        return result

    return asyncio.run(main())


@contextlib.asynccontextmanager
async def connect(handle: WyomingServerHandle) -> AsyncIterator[AsyncTcpClient]:
    client = AsyncTcpClient("127.0.0.1", handle.port, read_timeout=TIMEOUT_S)
    await client.connect()
    try:
        yield client
    finally:
        await client.disconnect()


async def read(client: AsyncTcpClient) -> Event:
    event = await client.read_event()
    assert event is not None, "the server closed the connection"
    return event


async def read_until(client: AsyncTcpClient, last: str) -> list[Event]:
    """Every event up to and including the first of type ``last``."""
    events = [await read(client)]
    while events[-1].type != last:
        events.append(await read(client))
    return events


async def synthesize(client: AsyncTcpClient, text: str, voice: str | None = None) -> list[Event]:
    request = Synthesize(text=text, voice=None if voice is None else SynthesizeVoice(name=voice))
    await client.write_event(request.event())
    return await read_until(client, "audio-stop")


def audio_of(events: list[Event]) -> tuple[AudioStart, list[AudioChunk]]:
    """The audio-start and the chunks of one answer, checking their order and format."""
    assert events[0].type == "audio-start", [e.type for e in events]
    assert events[-1].type == "audio-stop"
    start = AudioStart.from_event(events[0])
    chunks = [AudioChunk.from_event(e) for e in events[1:-1]]
    assert all(e.type == "audio-chunk" for e in events[1:-1]), [e.type for e in events]
    for chunk in chunks:
        assert (chunk.rate, chunk.width, chunk.channels) == (start.rate, 2, 1)
    return start, chunks


def seconds(chunks: list[AudioChunk]) -> float:
    return sum(chunk.seconds for chunk in chunks)


def rms(chunks: list[AudioChunk]) -> float:
    samples = np.frombuffer(b"".join(c.audio for c in chunks), dtype="<i2").astype(np.float64)
    return float(np.sqrt(np.mean(samples**2)))


async def wait_until_idle(services: Services) -> None:
    """Wait (up to a fail-safe bound) until no synthesis stream is open in the scheduler."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + SETTLE_S
    while services.scheduler.stats().active_streams and loop.time() < deadline:
        await asyncio.sleep(0.05)
