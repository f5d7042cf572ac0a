"""The Wyoming transport end to end, requests and answers: real TCP, the real voice, the
connection runner, driven by the wyoming package's own client (the protocol alone:
``test_protocol``; connections ending: ``test_tcp_lifecycle``)."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time

import pytest
from wyoming.event import Event

from tests.support.owed_audio import REPLY, Arrivals, assert_rendered_as_it_came
from tests.support.wyoming_client import (
    LONG_SENTENCE,
    SETTLE_S,
    STREAMED,
    audio_of,
    connect,
    read,
    read_until,
    rms,
    seconds,
    serve,
    synthesize,
)
from tests.support.wyoming_messages import (
    AudioChunk,
    Describe,
    Error,
    Info,
    Ping,
    Pong,
    Synthesize,
    SynthesizeChunk,
    SynthesizeStart,
    SynthesizeStop,
    SynthesizeVoice,
)
from voxflow.server.services import Services
from voxflow.transports.wyoming.info import parse_wyoming_uri
from voxflow.transports.wyoming.server import WyomingServerHandle, start_wyoming_server


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
        asyncio.run(start_wyoming_server(services.gateway(), "tcp://127.0.0.1"))


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


def test_a_describe_sent_during_an_answer_is_answered_after_it(services: Services) -> None:
    async def body(handle: WyomingServerHandle) -> list[Event]:
        async with connect(handle) as client:
            await client.write_event(Synthesize(text="First, a sentence of some length.").event())
            await client.write_event(Describe().event())
            await client.write_event(Ping(text="last").event())
            return await read_until(client, "pong")

    events = serve(services, body)
    assert [e.type for e in events[-3:]] == ["audio-stop", "info", "pong"]
    _, chunks = audio_of(events[:-2])
    assert seconds(chunks) > 0.5


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


def test_a_streamed_replys_last_sentence_comes_when_its_text_does(services: Services) -> None:
    # Sentences as Home Assistant streams an LLM's reply (tokens, here whole sentences at the
    # moments an LLM would finish them): the last one goes out once its text has come, not
    # when its listener, seconds of audio ahead, would need it (``tests.support.owed_audio``).
    async def body(handle: WyomingServerHandle) -> Arrivals:
        async with connect(handle) as client:
            arrivals: Arrivals = []

            async def receive() -> None:
                while (event := await read(client)).type != "audio-stop":
                    if event.type == "audio-chunk":
                        arrivals.append((time.monotonic(), AudioChunk.from_event(event).seconds))
                await read_until(client, "synthesize-stopped")

            receiver = asyncio.create_task(receive())
            await client.write_event(SynthesizeStart(voice=SynthesizeVoice(name="joe")).event())
            start = time.monotonic()
            for at, text in REPLY:
                await asyncio.sleep(max(0.0, start + at - time.monotonic()))
                await client.write_event(SynthesizeChunk(text=text).event())
            await client.write_event(SynthesizeStop().event())
            await receiver
            return arrivals

    assert_rendered_as_it_came(serve(services, body))


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
