"""The Wyoming transport end to end, connections ending: clients leaving, half-closing or sending
malformed bytes, the server closing (requests and answers: ``test_tcp``)."""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import pytest
from wyoming.client import AsyncTcpClient
from wyoming.event import Event, async_read_event, async_write_event

from tests.support.wyoming_client import (
    STREAMED,
    TIMEOUT_S,
    VERY_LONG,
    audio_of,
    connect,
    read,
    seconds,
    serve,
    wait_until_idle,
)
from tests.support.wyoming_messages import (
    Describe,
    Error,
    Info,
    Synthesize,
    SynthesizeChunk,
    SynthesizeStart,
)
from voxflow.server.services import Services
from voxflow.transports.wyoming.framing import MAX_LINE_BYTES
from voxflow.transports.wyoming.server import WyomingServerHandle, start_wyoming_server

# What a client leaving at its first audio was doing: a stream that never got its
# synthesize-stop (only the disconnect can end it), or a one-shot request whose text is paced to
# well over SETTLE_S (only stopping ends it sooner).
LEFT_REQUESTS = {
    "mid stream": [SynthesizeStart().event(), SynthesizeChunk(text=STREAMED + " And more").event()],
    "mid answer": [Synthesize(text=VERY_LONG).event()],
}


@pytest.mark.parametrize("left", LEFT_REQUESTS)
def test_a_client_leaving_stops_its_work(services: Services, left: str) -> None:
    async def body(handle: WyomingServerHandle) -> tuple[int, int]:
        async with connect(handle) as client:
            for event in LEFT_REQUESTS[left]:
                await client.write_event(event)
            while (await read(client)).type != "audio-chunk":
                pass
            during = services.scheduler.stats().active_streams
        await wait_until_idle(services)
        return during, services.scheduler.stats().active_streams

    during, after = serve(services, body)
    assert during == 1
    assert after == 0


def test_a_half_closed_client_still_gets_its_answer(services: Services) -> None:
    async def body(handle: WyomingServerHandle) -> list[Event]:
        reader, writer = await asyncio.open_connection("127.0.0.1", handle.port)
        try:
            await async_write_event(Synthesize(text="Short and sweet.").event(), writer)
            writer.write_eof()  # like `nc -N`: nothing more to say, still listening
            events = []
            while (event := await async_read_event(reader)) is not None:
                events.append(event)
            return events  # the server closed the connection once it had answered
        finally:
            writer.close()
            await writer.wait_closed()

    _, chunks = audio_of(serve(services, body))
    assert seconds(chunks) > 0.5


def test_close_ends_open_connections(services: Services) -> None:
    async def main() -> Event | None:
        handle = await start_wyoming_server(services.gateway(), "tcp://127.0.0.1:0")
        client = AsyncTcpClient("127.0.0.1", handle.port, read_timeout=TIMEOUT_S)
        await client.connect()
        try:
            async with asyncio.timeout(TIMEOUT_S):
                await client.write_event(SynthesizeStart().event())
                await client.write_event(SynthesizeChunk(text=STREAMED).event())
                assert (await read(client)).type == "audio-start"
                await handle.close()
                leaked = asyncio.all_tasks() - {asyncio.current_task()}
                assert not leaked, leaked
                # Drain what was sent before the close; then the server's end is closed.
                while (event := await client.read_event()) is not None:
                    assert event.type == "audio-chunk"
                return event
        finally:
            await client.disconnect()

    assert asyncio.run(main()) is None
    assert services.scheduler.stats().active_streams == 0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_serve_starts_wyoming_beside_http_when_asked(server_factory: Any) -> None:
    port = _free_port()
    with server_factory(wyoming_uri=f"tcp://127.0.0.1:{port}") as url:
        assert url.startswith("http://")

        async def describe() -> Info:
            async with AsyncTcpClient("127.0.0.1", port) as client:
                await client.write_event(Describe().event())
                while True:
                    event = await client.read_event()
                    assert event is not None
                    if Info.is_type(event.type):
                        return Info.from_event(event)

        info = asyncio.run(describe())
        assert info.tts and info.tts[0].supports_synthesize_streaming


def test_malformed_event_lines_get_errors_and_the_connection_stays_usable(
    services: Services,
) -> None:
    bad_lines = [
        b"{nope\n",
        b"[" * 100_000 + b"]" * 100_000 + b"\n",  # RecursionError in json
        b'{"type": "ping", "data": {"n": ' + b"9" * 5000 + b"}}\n",  # int over 4,300 digits
        b'{"type": "synthesize", "data": {"text": "a\\ud800"}}\n',  # lone surrogate
        b'{"data": {}}\n',  # no type
        b'{"type": "ping", "data": [1]}\n',
    ]

    async def body(handle: WyomingServerHandle) -> tuple[list[Event], list[Event]]:
        reader, writer = await asyncio.open_connection("127.0.0.1", handle.port)
        try:
            errors = []
            for line in bad_lines:
                writer.write(line)
                await writer.drain()
                event = await async_read_event(reader)
                assert event is not None, f"closed after {line[:40]!r}"
                errors.append(event)
            await async_write_event(Synthesize(text="Still here.").event(), writer)
            answer = [await async_read_event(reader)]
            while answer[-1] is not None and answer[-1].type != "audio-stop":
                answer.append(await async_read_event(reader))
            return errors, [e for e in answer if e is not None]
        finally:
            writer.close()
            await writer.wait_closed()

    errors, answer = serve(services, body)
    assert [e.type for e in errors] == ["error"] * len(bad_lines)
    assert {Error.from_event(e).code for e in errors} == {"invalid_event"}
    _, chunks = audio_of(answer)
    assert seconds(chunks) > 0.3


def test_unusable_lengths_get_an_error_then_the_connection_closes(services: Services) -> None:
    async def body(handle: WyomingServerHandle) -> tuple[Event | None, Event | None]:
        reader, writer = await asyncio.open_connection("127.0.0.1", handle.port)
        try:
            writer.write(b'{"type": "synthesize", "data_length": -5}\n')
            await writer.drain()
            return await async_read_event(reader), await async_read_event(reader)
        finally:
            writer.close()
            await writer.wait_closed()

    error, after = serve(services, body)
    assert error is not None and Error.from_event(error).code == "invalid_event"
    assert "data_length" in Error.from_event(error).text
    assert after is None  # the framing after it cannot be trusted: closed


def test_a_header_line_over_the_limit_gets_an_error_then_the_connection_closes(
    services: Services,
) -> None:
    async def body(handle: WyomingServerHandle) -> tuple[Event | None, Event | None]:
        reader, writer = await asyncio.open_connection("127.0.0.1", handle.port)
        try:
            # One byte over the limit and no more: the server reads every byte sent, so its close
            # is a clean end of stream, not a reset for unread data.
            start = b'{"type": "synthesize", "data": {"text": "'
            writer.write(start + b"a" * (MAX_LINE_BYTES + 1 - len(start)))
            await writer.drain()
            return await async_read_event(reader), await async_read_event(reader)
        finally:
            writer.close()
            await writer.wait_closed()

    error, after = serve(services, body)
    assert error is not None and Error.from_event(error).code == "invalid_event"
    assert "longer than" in Error.from_event(error).text
    assert after is None
