"""The Wyoming transport with the real voice, driven by the wyoming package's own client."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import socket
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any, TypeVar

import numpy as np
import pytest
from wyoming.client import AsyncTcpClient
from wyoming.event import Event, async_read_event, async_write_event

from voxflow.config import ServerSettings
from voxflow.session.services import Services
from voxflow.transports.wyoming.info import parse_wyoming_uri
from voxflow.transports.wyoming.server import WyomingServerHandle, start_wyoming_server

with warnings.catch_warnings():
    # wyoming.audio imports the deprecated stdlib audioop on 3.11 (unused here).
    warnings.filterwarnings("ignore", "'audioop' is deprecated", DeprecationWarning)
    from wyoming.audio import AudioChunk, AudioStart
    from wyoming.error import Error
    from wyoming.info import Describe, Info
    from wyoming.ping import Ping, Pong
    from wyoming.tts import (
        Synthesize,
        SynthesizeChunk,
        SynthesizeStart,
        SynthesizeStop,
        SynthesizeVoice,
    )

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


@pytest.fixture(scope="module")
def services() -> Iterator[Services]:
    built = Services.build(ServerSettings(workers=2))
    yield built
    built.shutdown()


def serve(services: Services, body: Callable[[WyomingServerHandle], Awaitable[T]]) -> T:
    """Run ``body`` against a fresh server on a free port; check nothing is left running."""

    async def main() -> T:
        handle = await start_wyoming_server(services, "tcp://127.0.0.1:0")
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


# -- tests ---------------------------------------------------------------------------------------


def test_uris_are_validated() -> None:
    assert parse_wyoming_uri("tcp://0.0.0.0:10200") == ("0.0.0.0", 10200)
    assert parse_wyoming_uri("tcp://[::1]:0") == ("::1", 0)
    for bad in (
        "unix:///tmp/voxflow.sock",
        "stdio://",
        "http://localhost:10200",
        "tcp://localhost",
        "tcp://:10200",
        "tcp://localhost:http",
        "tcp://localhost:70000",
        "tcp://localhost:10200/tts",
        "10200",
    ):
        with pytest.raises(ValueError, match="tcp://"):
            parse_wyoming_uri(bad)


def test_a_bad_uri_fails_before_listening(services: Services) -> None:
    with pytest.raises(ValueError, match="host and a port"):
        asyncio.run(start_wyoming_server(services, "tcp://127.0.0.1"))


def test_describe_lists_the_voices_and_streaming_support(services: Services) -> None:
    async def body(handle: WyomingServerHandle) -> Info:
        async with connect(handle) as client:
            await client.write_event(Describe().event())
            event = await read(client)
            assert Info.is_type(event.type)
            return Info.from_event(event)

    info = serve(services, body)
    assert len(info.tts) == 1
    program = info.tts[0]
    assert program.installed and program.supports_synthesize_streaming
    assert program.name == "voxflow" and program.version
    voices = {voice.name: voice for voice in program.voices}
    assert set(voices) == {v.name for v in services.registry.list()}
    joe = voices["joe"]
    assert joe.installed and joe.languages == ["en_US"] and joe.version
    assert joe.attribution.name == "NabuCasa"
    assert joe.attribution.url.endswith("NabuCasa/voice-datasets")
    assert joe.description is not None and "en_US-joe-medium" in joe.description
    assert "CC0" in joe.description
    assert joe.speakers is None  # a single-speaker voice


def test_one_shot_synthesize_streams_chunks_between_start_and_stop(services: Services) -> None:
    async def body(handle: WyomingServerHandle) -> tuple[list[Event], list[Event]]:
        async with connect(handle) as client:
            long = await synthesize(client, LONG_SENTENCE + ".")
            # The same connection serves the next request, by the full Piper name this time.
            short = await synthesize(client, "Hello there, how are you?", "en_US-joe-medium")
            return long, short

    long, short = serve(services, body)
    start, chunks = audio_of(long)
    assert (start.rate, start.width, start.channels) == (22050, 2, 1)
    # One sentence, several chunks: each rendered window is sent on, not the finished sentence.
    assert len(chunks) > 1
    assert seconds(chunks) > 3.0
    assert rms(chunks) > 100  # speech, not silence
    timestamps = [c.timestamp for c in chunks]
    assert timestamps[0] == 0
    assert all(a is not None and b is not None and a < b for a, b in itertools.pairwise(timestamps))
    _, short_chunks = audio_of(short)
    assert seconds(short_chunks) > 0.5
    assert seconds(short_chunks) < seconds(chunks)


def test_requests_sent_back_to_back_are_answered_one_after_the_other(services: Services) -> None:
    async def body(handle: WyomingServerHandle) -> list[Event]:
        async with connect(handle) as client:
            for text in ("First, a sentence of some length.", "Then a second one."):
                await client.write_event(Synthesize(text=text).event())
            return await read_until(client, "audio-stop") + await read_until(client, "audio-stop")

    events = serve(services, body)
    split = [e.type for e in events].index("audio-stop") + 1
    first, second = audio_of(events[:split]), audio_of(events[split:])
    assert seconds(first[1]) > seconds(second[1]) > 0.5


def test_streamed_text_gets_audio_before_synthesize_stop(services: Services) -> None:
    words = STREAMED.split(" ")

    async def body(handle: WyomingServerHandle) -> tuple[list[tuple[Event, bool]], list[Event]]:
        async with connect(handle) as client:
            stop_sent = asyncio.Event()
            first_chunk = asyncio.Event()
            received: list[tuple[Event, bool]] = []

            async def receive() -> None:
                while True:
                    event = await read(client)
                    received.append((event, stop_sent.is_set()))
                    if event.type == "audio-chunk":
                        first_chunk.set()
                    if event.type == "synthesize-stopped":
                        return

            receiver = asyncio.create_task(receive())
            voice = SynthesizeVoice(name="joe")
            # Home Assistant's order: start, chunks, the whole text again, stop.
            await client.write_event(SynthesizeStart(voice=voice).event())
            for i, word in enumerate(words):
                piece = word if i == 0 else " " + word
                await client.write_event(SynthesizeChunk(text=piece).event())
                await asyncio.sleep(0.02)
            await client.write_event(Synthesize(text=STREAMED, voice=voice).event())
            # A server that waits for synthesize-stop never sets first_chunk; the wait is only a
            # fail-safe for slow machines, the assertion below is what tells them apart.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(first_chunk.wait(), SETTLE_S)
            stop_sent.set()
            await client.write_event(SynthesizeStop().event())
            await receiver
            one_shot = await synthesize(client, STREAMED)
            return received, one_shot

    received, one_shot = serve(services, body)
    types = [event.type for event, _ in received]
    first_chunk_before_stop = next(
        not late for event, late in received if event.type == "audio-chunk"
    )
    assert first_chunk_before_stop
    assert types[-2:] == ["audio-stop", "synthesize-stopped"]
    _, chunks = audio_of([event for event, _ in received][:-1])
    assert types.count("audio-start") == 1
    # The duplicate synthesize was ignored: the text was spoken once, about as long as one-shot.
    _, one_shot_chunks = audio_of(one_shot)
    assert 0.7 * seconds(one_shot_chunks) < seconds(chunks) < 1.3 * seconds(one_shot_chunks)


def test_unknown_voice_is_an_error_and_the_connection_stays_usable(services: Services) -> None:
    async def body(handle: WyomingServerHandle) -> dict[str, list[Event]]:
        seen: dict[str, list[Event]] = {}
        async with connect(handle) as client:
            await client.write_event(
                Synthesize(text="Hi.", voice=SynthesizeVoice(name="nobody")).event()
            )
            seen["one-shot"] = [await read(client)]
            # A stream with an unknown voice: error, then (as HA waits for it) synthesize-stopped.
            voice = SynthesizeVoice(name="nobody")
            await client.write_event(SynthesizeStart(voice=voice).event())
            await client.write_event(SynthesizeChunk(text="Hello there.").event())
            await client.write_event(Synthesize(text="Hello there.", voice=voice).event())
            await client.write_event(SynthesizeStop().event())
            seen["stream"] = await read_until(client, "synthesize-stopped")
            await client.write_event(
                Synthesize(text="Hi.", voice=SynthesizeVoice(name="joe", speaker="ghost")).event()
            )
            seen["speaker"] = [await read(client)]
            seen["after"] = await synthesize(client, "Still working fine.")
        return seen

    seen = serve(services, body)
    for key in ("one-shot", "stream"):
        error = Error.from_event(seen[key][0])
        assert error.code == "unknown_voice"
        assert "nobody" in error.text and "joe" in error.text  # names the voices there are
    assert [e.type for e in seen["stream"]] == ["error", "synthesize-stopped"]
    speaker_error = Error.from_event(seen["speaker"][0])
    assert speaker_error.code == "unknown_speaker" and "ghost" in speaker_error.text
    _, chunks = audio_of(seen["after"])
    assert seconds(chunks) > 0.5


def test_protocol_misuse_gets_errors_and_unknown_events_are_ignored(services: Services) -> None:
    async def body(handle: WyomingServerHandle) -> list[Event]:
        async with connect(handle) as client:
            replies = []
            await client.write_event(SynthesizeChunk(text="orphan").event())
            replies.append(await read(client))
            await client.write_event(SynthesizeStop().event())
            replies.append(await read(client))
            await client.write_event(Event(type="synthesize", data={"text": 42}))
            replies.append(await read(client))
            await client.write_event(Event(type="select-program", data={"name": "voxflow"}))
            await client.write_event(Ping(text="still there?").event())
            replies.append(await read(client))
            return replies

    replies = serve(services, body)
    assert [Error.from_event(e).code for e in replies[:3]] == [
        "no_stream",
        "no_stream",
        "invalid_event",
    ]
    # select-program was dropped silently: the next answer is the pong.
    assert Pong.is_type(replies[3].type) and Pong.from_event(replies[3]).text == "still there?"


def test_a_client_leaving_mid_stream_stops_its_work(services: Services) -> None:
    async def body(handle: WyomingServerHandle) -> tuple[int, int]:
        async with connect(handle) as client:
            await client.write_event(SynthesizeStart().event())
            await client.write_event(SynthesizeChunk(text=STREAMED + " And more").event())
            while (await read(client)).type != "audio-chunk":
                pass
            during = services.scheduler.stats().active_streams
        # The stream never got synthesize-stop, so nothing but the disconnect can end it.
        await wait_until_idle(services)
        return during, services.scheduler.stats().active_streams

    during, after = serve(services, body)
    assert during == 1
    assert after == 0


def test_a_client_leaving_mid_answer_stops_its_work(services: Services) -> None:
    async def body(handle: WyomingServerHandle) -> tuple[int, int]:
        async with connect(handle) as client:
            await client.write_event(Synthesize(text=VERY_LONG).event())
            while (await read(client)).type != "audio-chunk":
                pass
            during = services.scheduler.stats().active_streams
        # Rendering all of VERY_LONG is paced to well over SETTLE_S; only stopping ends it sooner.
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
        handle = await start_wyoming_server(services, "tcp://127.0.0.1:0")
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
