"""VoxflowClient against a real server, routing and connection loss against a scripted one."""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import pytest
from websockets.asyncio.server import ServerConnection, serve

from tests.support.traffic import LONG, SHORT
from voxflow.client import (
    AudioEvent,
    CancelledEvent,
    ContextRecorder,
    DoneEvent,
    ErrorEvent,
    Event,
    TimestampsEvent,
    VoxflowClient,
    VoxflowConnectionError,
    parse_event,
    speak,
    stream_url,
)

# Long enough that synthesis is still running when the test barges in.
MEDIUM = (
    f"{LONG} The conductor smiles, lifts her baton, and the first notes rise into the warm night "
    "air above the square, where children stop their games to listen."
)
TIMEOUT_S = 60.0


@pytest.fixture(scope="module")
def ws_url(server_url: str) -> str:
    return stream_url(server_url)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# -- pure parts ----------------------------------------------------------------------------------


def test_parse_event_reads_every_message_type() -> None:
    pcm = b"\x01\x00\xff\x7f"
    audio = parse_event(
        json.dumps(
            {
                "type": "audio",
                "context_id": "a",
                "seq": 3,
                "offset_ms": 10,
                "duration_ms": 2.5,
                "audio": base64.b64encode(pcm).decode(),
            }
        ),
        7.0,
    )
    assert audio == AudioEvent("a", 3, 10.0, 2.5, pcm, 7.0)
    stamps = parse_event(
        '{"type":"timestamps","context_id":"a","words":[{"word":"Hi","start_ms":0,'
        '"end_ms":100.5,"char_start":0,"char_end":2}]}',
        1.0,
    )
    assert isinstance(stamps, TimestampsEvent)
    assert [(w.word, w.end_ms, w.char_end) for w in stamps.words] == [("Hi", 100.5, 2)]
    done = parse_event(
        '{"type":"done","context_id":"a","metrics":{"ttfa_ms":null,"audio_ms":5,"synth_ms":1,'
        '"rtf":0.2,"chunks":2,"deadline_misses":0}}',
        2.0,
    )
    assert isinstance(done, DoneEvent)
    assert (done.metrics.ttfa_ms, done.metrics.audio_ms, done.metrics.chunks) == (None, 5.0, 2)
    cancelled = parse_event(
        '{"type":"cancelled","context_id":"a","spoken_text":"Hi","played_ms":12,"latency_ms":0.4}',
        3.0,
    )
    assert cancelled == CancelledEvent("a", "Hi", 12.0, 0.4, 3.0)
    error = parse_event(
        '{"type":"error","context_id":null,"code":"invalid_json","message":"x","retryable":true}',
        4.0,
    )
    assert error == ErrorEvent(None, "invalid_json", "x", True, 4.0)


@pytest.mark.parametrize(
    "raw",
    [
        "not json",
        "[1, 2]",
        '{"type":"mystery","context_id":"a"}',
        '{"type":"audio","context_id":"a","seq":0,"offset_ms":0,"duration_ms":1,"audio":"@@"}',
        '{"type":"audio","context_id":"a","seq":true,"offset_ms":0,"duration_ms":1,"audio":""}',
        '{"type":"audio","seq":0,"offset_ms":0,"duration_ms":1,"audio":""}',
        '{"type":"timestamps","context_id":"a","words":["Hi"]}',
        '{"type":"done","context_id":"a","metrics":{"audio_ms":"5"}}',
        '{"type":"error","context_id":5,"code":"x"}',
    ],
)
def test_parse_event_rejects_malformed_messages(raw: str) -> None:
    with pytest.raises(ValueError):
        parse_event(raw, 0.0)


def test_stream_url() -> None:
    assert stream_url("http://127.0.0.1:8000") == "ws://127.0.0.1:8000/v1/stream"
    assert stream_url("https://tts.example/") == "wss://tts.example/v1/stream"
    assert stream_url("ws://h:1/v1/stream?audio=x") == "ws://h:1/v1/stream?audio=x"
    with pytest.raises(ValueError):
        stream_url("ftp://h/")


def _audio(cid: str, seq: int, at: float, ms: float = 100.0) -> AudioEvent:
    return AudioEvent(cid, seq, seq * ms, ms, b"\x00\x00" * int(ms * 24), at)


def test_recorder_computes_client_side_figures() -> None:
    recorder = ContextRecorder("a", playout_buffer_ms=150)
    recorder.text_sent(10.0)
    recorder.text_sent(11.0)  # only the first text starts the clock
    recorder.observe(_audio("a", 0, 10.05))
    recorder.observe(_audio("a", 1, 10.08))  # 200 ms in hand: playback starts at 10.08
    recorder.observe(_audio("a", 2, 10.5))  # the player ran dry at 10.28
    assert recorder.audio_ms == pytest.approx(300.0)
    assert not recorder.finished
    result = recorder.result()
    assert result.ttfa_ms == pytest.approx(50.0)
    assert result.chunk_gaps_ms == pytest.approx((30.0, 420.0))
    assert result.playout.underruns == 1
    assert result.playout.underrun_ms == pytest.approx(220.0)
    assert len(result.audio) == 3 * 4800
    with pytest.raises(ValueError):
        recorder.observe(_audio("b", 0, 11.0))


def test_recorder_starts_playback_of_a_short_context_at_done() -> None:
    recorder = ContextRecorder("a", playout_buffer_ms=500)
    recorder.observe(_audio("a", 0, 1.0))
    assert recorder.playout.started_at is None
    metrics = parse_event(
        '{"type":"done","context_id":"a","metrics":{"ttfa_ms":1,"audio_ms":100,"synth_ms":1,'
        '"rtf":0.01,"chunks":1,"deadline_misses":0}}',
        1.2,
    )
    recorder.observe(metrics)
    assert recorder.finished
    assert recorder.playout.started_at == 1.2
    assert recorder.result().metrics is not None


# -- against a scripted server -------------------------------------------------------------------


def _msg(kind: str, cid: str | None, **fields: object) -> str:
    return json.dumps({"type": kind, "context_id": cid, **fields})


def _audio_msg(cid: str, seq: int, data: bytes) -> str:
    encoded = base64.b64encode(data).decode()
    return _msg("audio", cid, seq=seq, offset_ms=0, duration_ms=1, audio=encoded)


_DONE_METRICS = {
    "ttfa_ms": 1,
    "audio_ms": 1,
    "synth_ms": 1,
    "rtf": 1,
    "chunks": 1,
    "deadline_misses": 0,
}


@asynccontextmanager
async def scripted_server(
    script: Callable[[ServerConnection], Awaitable[None]],
) -> AsyncIterator[str]:
    async with serve(script, "127.0.0.1", 0) as server:
        port = next(iter(server.sockets)).getsockname()[1]
        yield f"ws://127.0.0.1:{port}/v1/stream"


def test_events_are_routed_per_context_and_per_use_of_an_id() -> None:
    async def script(ws: ServerConnection) -> None:
        await ws.recv()
        for message in [
            _audio_msg("a", 0, b"first"),
            _msg("done", "a", metrics=_DONE_METRICS),
            _audio_msg("a", 0, b"second"),  # the id reused
            _msg("timestamps", "b", words=[]),
            "this is not a protocol message",
            _msg("error", None, code="unknown_type", message="?", retryable=False),
            _msg("done", "a", metrics=_DONE_METRICS),
        ]:
            await ws.send(message)
        await ws.send(b"\x00\x01")  # binary frames are not part of the JSON protocol
        await ws.send(_msg("error", None, code="last", message="", retryable=False))
        await ws.send(_msg("cancelled", "b", spoken_text="", played_ms=0, latency_ms=0))
        await ws.wait_closed()

    async def body() -> None:
        async with scripted_server(script) as url, VoxflowClient.connect(url) as client:
            await client.start("a")
            # b's last event comes after everything else, so a's two uses are both complete
            # before a's events are read: they must still come out one use at a time.
            b_events = [e async for e in client.events("b")]
            assert [type(e) for e in b_events] == [TimestampsEvent, CancelledEvent]
            first = [e async for e in client.events("a")]
            second = [e async for e in client.events("a")]
            assert [type(e) for e in first] == [AudioEvent, DoneEvent]
            assert [type(e) for e in second] == [AudioEvent, DoneEvent]
            assert isinstance(first[0], AudioEvent) and first[0].audio == b"first"
            assert isinstance(second[0], AudioEvent) and second[0].audio == b"second"
            assert first[0].received_at <= second[0].received_at
            assert client.pending("a") == ()
            errors = client.errors()
            codes = [(await anext(errors)).code, (await anext(errors)).code]
            assert codes == ["unknown_type", "last"]
            assert not client.closed

    asyncio.run(asyncio.wait_for(body(), TIMEOUT_S))


def test_pending_takes_what_arrived_without_waiting() -> None:
    async def script(ws: ServerConnection) -> None:
        await ws.recv()
        await ws.send(_audio_msg("a", 0, b"x"))
        await ws.send(_msg("cancelled", "a", spoken_text="", played_ms=0, latency_ms=0))
        await ws.send(_audio_msg("a", 0, b"late"))  # would be a server bug: after cancelled
        await ws.send(_msg("error", None, code="sync", message="", retryable=False))
        await ws.wait_closed()

    async def body() -> None:
        async with scripted_server(script) as url, VoxflowClient.connect(url) as client:
            await client.start("a")
            await anext(client.errors())  # everything before it has been routed
            events = client.events("a")
            assert isinstance(await anext(events), AudioEvent)
            taken = client.pending("a")
            assert [type(e) for e in taken] == [CancelledEvent, AudioEvent]
            assert client.pending("a") == ()
            # Its terminal event is gone: the iterator ends instead of waiting for ever.
            assert [e async for e in events] == []

    asyncio.run(asyncio.wait_for(body(), TIMEOUT_S))


def test_connection_loss_ends_waiting_iterators_with_an_error() -> None:
    async def script(ws: ServerConnection) -> None:
        await ws.recv()
        await ws.send(_audio_msg("a", 0, b"x"))
        ws.transport.abort()  # the network goes away: no close frame

    async def body() -> None:
        async with scripted_server(script) as url:
            async with VoxflowClient.connect(url) as client:
                await client.start("a")
                events = client.events("a")
                assert isinstance(await anext(events), AudioEvent)
                with pytest.raises(VoxflowConnectionError):
                    await anext(events)
                assert client.closed
                assert client.close_reason is not None
                with pytest.raises(VoxflowConnectionError):
                    await anext(client.events("never-started"))
                with pytest.raises(VoxflowConnectionError):
                    await client.send_text("a", "more")
                assert [e async for e in client.errors()] == []
            readers = [t for t in asyncio.all_tasks() if t.get_name() == "voxflow-client-reader"]
            assert readers == []

    asyncio.run(asyncio.wait_for(body(), TIMEOUT_S))


def test_connect_to_nothing_raises_connection_error() -> None:
    async def body() -> None:
        url = f"ws://127.0.0.1:{free_port()}/v1/stream"
        async with VoxflowClient.connect(url, open_timeout=5):
            pytest.fail("connected to a closed port")

    with pytest.raises(VoxflowConnectionError):
        asyncio.run(body())


# -- against the real server ---------------------------------------------------------------------


def test_streamed_audio_adds_up_to_the_reported_duration(ws_url: str) -> None:
    async def body() -> tuple[list[AudioEvent], ContextRecorder]:
        async with VoxflowClient.connect(ws_url) as client:
            recorder = ContextRecorder("a")
            await client.start("a", seed=1)
            recorder.text_sent(await client.send_text("a", LONG))
            await client.end("a")
            audio: list[AudioEvent] = []
            async for event in client.events("a"):
                recorder.observe(event)
                if isinstance(event, AudioEvent):
                    audio.append(event)
            return audio, recorder

    audio, recorder = asyncio.run(asyncio.wait_for(body(), TIMEOUT_S))
    result = recorder.result()
    assert result.done is not None and result.metrics is not None
    metrics = result.metrics
    assert [e.seq for e in audio] == list(range(metrics.chunks))
    assert metrics.chunks > 1
    tolerance = 1.0 * metrics.chunks
    assert abs(result.audio_ms - metrics.audio_ms) <= tolerance
    # pcm_24000: 2 bytes a sample, 24 samples a millisecond.
    assert abs(len(result.audio) / 48 - metrics.audio_ms) <= tolerance
    for before, after in itertools.pairwise(audio):
        assert after.offset_ms == pytest.approx(before.offset_ms + before.duration_ms, abs=0.01)
        assert after.received_at >= before.received_at
    assert result.ttfa_ms is not None and result.ttfa_ms > 0
    assert metrics.ttfa_ms is not None and metrics.ttfa_ms > 0
    assert all(gap >= 0 for gap in result.chunk_gaps_ms)
    assert result.words, "the server sends word timestamps"
    for word in result.words:
        assert LONG[word.char_start : word.char_end] == word.word
    assert result.playout.received_ms == pytest.approx(result.audio_ms)
    assert result.playout.started_at is not None


def test_two_contexts_on_one_connection_both_complete(ws_url: str) -> None:
    async def body() -> tuple[ContextRecorder, ContextRecorder]:
        async with VoxflowClient.connect(ws_url) as client:
            pcm = ContextRecorder("pcm")
            ulaw = ContextRecorder("ulaw")
            await client.start("pcm", output_format="pcm_16000")
            await client.start("ulaw", output_format="ulaw_8000")
            pcm.text_sent(await client.send_text("pcm", LONG))
            ulaw.text_sent(await client.send_text("ulaw", SHORT))
            await client.end("pcm")
            await client.end("ulaw")
            await asyncio.gather(pcm.collect(client), ulaw.collect(client))
            return pcm, ulaw

    pcm, ulaw = (r.result() for r in asyncio.run(asyncio.wait_for(body(), TIMEOUT_S)))
    for result, bytes_per_ms in ((pcm, 32), (ulaw, 8)):
        assert result.metrics is not None
        assert not result.errors
        assert abs(len(result.audio) / bytes_per_ms - result.metrics.audio_ms) <= (
            1.0 * result.metrics.chunks
        )
    assert pcm.audio_ms > ulaw.audio_ms  # LONG says more than SHORT


def test_cancel_stops_the_audio_and_frees_the_id(ws_url: str) -> None:
    async def body() -> None:
        async with VoxflowClient.connect(ws_url) as client:
            recorder = ContextRecorder("talk")
            await client.start("talk")
            recorder.text_sent(await client.send_text("talk", MEDIUM))
            await client.end("talk")
            events = client.events("talk")
            async for event in events:
                recorder.observe(event)
                if isinstance(event, AudioEvent):
                    break
            played = recorder.playout.played_ms(time.monotonic())
            await client.cancel("talk", played_ms=played)
            rest: list[Event] = [e async for e in events]
            for event in rest:
                recorder.observe(event)
            cancelled = rest[-1]
            assert isinstance(cancelled, CancelledEvent)
            assert cancelled.played_ms <= played + 0.01
            assert MEDIUM.startswith(cancelled.spoken_text)
            await asyncio.sleep(0.3)  # room for audio that should not come
            assert not any(isinstance(e, AudioEvent) for e in client.pending("talk"))
            # The id is free again, and the whole text is much longer than what was sent.
            full = await speak(client, "talk", MEDIUM)
            assert full.done is not None
            assert recorder.audio_ms < full.audio_ms / 2

    asyncio.run(asyncio.wait_for(body(), TIMEOUT_S))


def test_bad_input_gets_error_events_and_the_connection_stays_usable(ws_url: str) -> None:
    async def first(client: VoxflowClient, context_id: str) -> Event:
        return await anext(client.events(context_id))

    async def body() -> None:
        async with VoxflowClient.connect(ws_url) as client:
            await client.start("bad", voice="no-such-voice")
            error = await first(client, "bad")
            assert isinstance(error, ErrorEvent)
            assert (error.context_id, error.code) == ("bad", "unknown_voice")
            await client.start("fmt", output_format="mp3_44100_999")
            error = await first(client, "fmt")
            assert isinstance(error, ErrorEvent) and error.code == "unsupported_format"
            await client.flush("ghost")
            error = await first(client, "ghost")
            assert isinstance(error, ErrorEvent) and error.code == "unknown_context"
            await client.send_message({"type": "bogus"})
            error = await anext(client.errors())
            assert (error.context_id, error.code) == (None, "unknown_type")
            result = await speak(client, "good", SHORT)
            assert result.errors == ()
            assert result.done is not None and result.audio_ms > 0

    asyncio.run(asyncio.wait_for(body(), TIMEOUT_S))


def test_speak_stops_at_a_rejected_start(ws_url: str) -> None:
    async def body() -> None:
        async with VoxflowClient.connect(ws_url) as client:
            result = await speak(client, "x", SHORT, output_format="opus_48000")
            assert [e.code for e in result.errors] == ["unsupported_format"]

    asyncio.run(asyncio.wait_for(body(), TIMEOUT_S))


def test_no_task_outlives_the_client(ws_url: str) -> None:
    async def body() -> None:
        baseline = asyncio.all_tasks()
        async with VoxflowClient.connect(ws_url) as client:
            assert len(asyncio.all_tasks()) > len(baseline)  # the reader runs meanwhile
            await speak(client, "x", SHORT)
            # Someone still waiting when the client closes must be woken, not left hanging.
            waiter = asyncio.create_task(first_event(client, "never"))
            await asyncio.sleep(0)
        with pytest.raises(VoxflowConnectionError):
            await waiter
        assert client.closed
        assert asyncio.all_tasks() == baseline

    async def first_event(client: VoxflowClient, context_id: str) -> Event:
        return await anext(client.events(context_id))

    asyncio.run(asyncio.wait_for(body(), TIMEOUT_S))
