"""One request of each protocol as ``voxflow soak`` makes it, folded into an ``Outcome``: admitted
(its time to first audio and the underruns of a 150 ms player), refused (how long the refusal
took), or what went wrong, by kind.

The native client is ``voxflow.client`` (as ``voxflow bench`` uses it); HTTP goes through
``soak.wire``'s small client; the ElevenLabs WebSocket through ``websockets``. Only 24 kHz PCM
has a known duration per byte, so underruns are counted for PCM answers only.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import logging
import time
from collections.abc import Awaitable
from dataclasses import dataclass

from websockets.asyncio.client import connect as ws_connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake

from voxflow import (
    AudioEvent,
    ContextRecorder,
    ErrorEvent,
    PlayoutBuffer,
    VoxflowClient,
    VoxflowConnectionError,
)
from voxflow_bench.soak.wire import Endpoint, HttpAnswer, IncompleteBody, post_json, reset

__all__ = [
    "ELEVEN_VOICE",
    "Outcome",
    "elevenlabs_http",
    "elevenlabs_ws",
    "guarded",
    "native_reply",
    "native_vanish",
    "openai_speech",
]

log = logging.getLogger(__name__)

# An ElevenLabs-style voice id: the server maps it to its default voice, whatever that is.
ELEVEN_VOICE = "21m00Tcm4TlvDq8ikWAM"
PCM_24K_BYTES_PER_MS = 48.0  # 24 kHz, 16-bit, mono
REFUSED = ("concurrency_limited", "too_many_concurrent_requests")
# The native probe: a flush of a context that is never opened is answered (unknown_context)
# once every frame before it was handled, so it tells an admitted start (which has no answer)
# from a refused one without sending text that a refused start would open with defaults.
PROBE = "soak-probe"


class MalformedAnswer(Exception):
    """An SSE event or a JSON line that does not parse."""


@dataclass(frozen=True)
class Outcome:
    protocol: str
    status: str  # ok, refused, cancelled, vanished, or what went wrong ("http 500", "timeout")
    ttfa_ms: float | None = None
    refusal_ms: float | None = None  # request sent -> its 429 or error frame
    underruns: int = 0
    underrun_ms: float = 0.0
    audio_ms: float = 0.0
    playback_end: float | None = None  # when a listener would finish hearing it (monotonic)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def refused(self) -> bool:
        return self.status == "refused"


async def guarded(protocol: str, request: Awaitable[Outcome], timeout_s: float) -> Outcome:
    """``request``'s outcome, with a timeout and every way a connection fails as an error kind."""
    try:
        async with asyncio.timeout(timeout_s):
            return await request
    except TimeoutError:
        return Outcome(protocol, "timeout")
    except IncompleteBody:
        return Outcome(protocol, "cut body")
    except MalformedAnswer:
        return Outcome(protocol, "malformed answer")
    except (VoxflowConnectionError, ConnectionClosed, ConnectionError, asyncio.IncompleteReadError):
        return Outcome(protocol, "connection lost")
    except InvalidHandshake as error:
        return Outcome(protocol, f"handshake refused: {error}")
    except OSError as error:
        return Outcome(protocol, f"connect failed: {error.strerror or error}")
    except Exception as error:
        # One odd answer must not end a twenty-minute run: it is counted, by kind, as an error.
        log.warning("%s request failed: %r", protocol, error)
        return Outcome(protocol, f"client error: {type(error).__name__}")


def _played(protocol: str, playout: PlayoutBuffer, text_at: float, first: float | None) -> Outcome:
    stats = playout.stats()
    return Outcome(
        protocol,
        "ok" if first is not None else "no audio",
        ttfa_ms=None if first is None else 1000.0 * (first - text_at),
        underruns=stats.underruns,
        underrun_ms=stats.underrun_ms,
        audio_ms=stats.received_ms,
        playback_end=stats.finish_at,
    )


# -- native WebSocket -----------------------------------------------------------------------------


async def native_reply(
    client: VoxflowClient,
    context_id: str,
    text: str,
    *,
    playout_ms: float = 150.0,
    seed: int | None = 1,
    output_format: str = "pcm_24000",
    cancel_after_ms: float | None = None,
) -> Outcome:
    """One context on an open connection: start, then (if admitted) text and end, recorded to
    ``done``; with ``cancel_after_ms``, a barge-in once that much audio came."""
    started = await client.start(context_id, output_format=output_format, seed=seed)
    await client.flush(PROBE)
    await anext(aiter(client.events(PROBE)))
    for event in client.pending(context_id):
        if isinstance(event, ErrorEvent):
            if event.code in REFUSED:
                ms = 1000.0 * (event.received_at - started)
                return Outcome("native", "refused", refusal_ms=ms)
            return Outcome("native", f"native {event.code}")
    recorder = ContextRecorder(context_id, playout_ms)
    recorder.text_sent(await client.send_text(context_id, text))
    await client.end(context_id)
    if cancel_after_ms is None:
        result = await recorder.collect(client, stop_on_error=True)
    else:
        cancel_sent = False
        async for event in client.events(context_id):
            recorder.observe(event)
            if isinstance(event, ErrorEvent):
                break
            if (
                isinstance(event, AudioEvent)
                and not cancel_sent
                and recorder.audio_ms >= cancel_after_ms
            ):
                await client.cancel(context_id, recorder.playout.played_ms(time.monotonic()))
                cancel_sent = True
        result = recorder.result()
    if result.errors:
        return Outcome("native", f"native {result.errors[0].code}")
    if result.cancelled is not None:
        return Outcome("native", "cancelled", ttfa_ms=result.ttfa_ms)
    stats = result.playout
    return Outcome(
        "native",
        "ok" if result.done is not None and result.ttfa_ms is not None else "no audio",
        ttfa_ms=result.ttfa_ms,
        underruns=stats.underruns,
        underrun_ms=stats.underrun_ms,
        audio_ms=stats.received_ms,
        playback_end=stats.finish_at,
    )


async def native_vanish(endpoint: Endpoint, text: str, wait_for_audio: bool = True) -> Outcome:
    """A client that starts a context and is gone (a reset, no close handshake) once its first
    audio came (or right after sending, without ``wait_for_audio``)."""
    async with ws_connect(
        f"{endpoint.ws}/v1/stream", ping_interval=None, compression=None, max_size=None
    ) as ws:
        started = time.monotonic()
        await ws.send(
            json.dumps({"type": "start", "context_id": "v", "output_format": "pcm_16000"})
        )
        await ws.send(json.dumps({"type": "text", "context_id": "v", "text": text}))
        await ws.send(json.dumps({"type": "flush", "context_id": "v"}))
        status = "vanished"
        refusal_ms = None
        if wait_for_audio:
            while True:
                message = json.loads(await ws.recv())
                if message.get("type") == "error":
                    if message.get("code") in REFUSED:
                        status, refusal_ms = "refused", 1000.0 * (time.monotonic() - started)
                    else:
                        status = f"native {message.get('code')}"
                    break
                if message.get("type") == "audio":
                    break
        reset(ws.transport.get_extra_info("socket"))
        ws.transport.abort()
        return Outcome("native", status, refusal_ms=refusal_ms)


# -- ElevenLabs WebSocket -------------------------------------------------------------------------


async def elevenlabs_ws(
    endpoint: Endpoint, text: str, *, playout_ms: float = 150.0, output_format: str = "pcm_24000"
) -> Outcome:
    """stream-input: the init message, the text, ``{"text": ""}``; audio until ``isFinal``."""
    url = (
        f"{endpoint.ws}/v1/text-to-speech/{ELEVEN_VOICE}/stream-input?output_format={output_format}"
    )
    pcm = output_format == "pcm_24000"
    async with ws_connect(url, ping_interval=None, compression=None, max_size=None) as ws:
        opened = time.monotonic()
        await ws.send(json.dumps({"text": " "}))
        text_at = time.monotonic()
        await ws.send(json.dumps({"text": text + " "}))
        await ws.send(json.dumps({"text": ""}))
        playout = PlayoutBuffer(playout_ms)
        first: float | None = None
        async for raw in ws:
            now = time.monotonic()
            message = json.loads(raw)
            if "error" in message:
                if message["error"] in REFUSED:
                    return Outcome("elevenlabs-ws", "refused", refusal_ms=1000.0 * (now - opened))
                return Outcome("elevenlabs-ws", f"elevenlabs {message['error']}")
            audio = base64.b64decode(message.get("audio") or "")
            if audio:
                first = first or now
                playout.add(now, len(audio) / PCM_24K_BYTES_PER_MS if pcm else 0.0)
            if message.get("isFinal"):
                playout.mark_end(now)
                return _played("elevenlabs-ws", playout, text_at, first)
        return Outcome("elevenlabs-ws", "closed before isFinal")


# -- HTTP -----------------------------------------------------------------------------------------


async def openai_speech(
    endpoint: Endpoint,
    text: str,
    *,
    response_format: str = "pcm",
    sse: bool = False,
    playout_ms: float = 150.0,
    vanish: bool = False,
) -> Outcome:
    """``POST /v1/audio/speech``, read as it streams (or left by a reset after its first bytes)."""
    payload: dict[str, object] = {
        "model": "tts-1",
        "voice": "alloy",
        "input": text,
        "response_format": response_format,
    }
    if sse:
        payload["stream_format"] = "sse"
    answer = await post_json(endpoint, "/v1/audio/speech", payload)
    mode = "sse" if sse else ("pcm" if response_format == "pcm" else "bytes")
    return await _read_answer("openai", answer, mode, playout_ms, vanish)


async def elevenlabs_http(
    endpoint: Endpoint,
    text: str,
    *,
    output_format: str = "pcm_24000",
    timestamps: bool = False,
    playout_ms: float = 150.0,
    vanish: bool = False,
) -> Outcome:
    """``POST /v1/text-to-speech/{voice}/stream`` (or ``/stream/with-timestamps``: JSON lines)."""
    path = f"/v1/text-to-speech/{ELEVEN_VOICE}/stream"
    path += "/with-timestamps" if timestamps else ""
    answer = await post_json(endpoint, f"{path}?output_format={output_format}", {"text": text})
    pcm = output_format == "pcm_24000"
    mode = "lines" if timestamps else ("pcm" if pcm else "bytes")
    return await _read_answer("elevenlabs-http", answer, mode, playout_ms, vanish, pcm)


async def _read_answer(
    protocol: str,
    answer: HttpAnswer,
    mode: str,
    playout_ms: float,
    vanish: bool,
    pcm: bool = True,
) -> Outcome:
    try:
        if answer.status == 429:
            return Outcome(protocol, "refused", refusal_ms=answer.head_ms)
        if answer.status != 200:
            return Outcome(protocol, f"http {answer.status}")
        playout = PlayoutBuffer(playout_ms)
        first: float | None = None
        pending = b""
        finished = mode not in ("sse", "lines")  # these say they are whole; bytes just end
        async for chunk in answer.chunks():
            now = time.monotonic()
            if mode in ("pcm", "bytes"):
                audio = chunk
            else:
                pending += chunk
                audio, pending, ended = _framed_audio(mode, pending)
                finished = finished or ended
            if audio:
                first = first or now
                playout.add(
                    now, len(audio) / PCM_24K_BYTES_PER_MS if pcm and mode != "bytes" else 0
                )
                if vanish:
                    answer.vanish()
                    return Outcome(protocol, "vanished")
        playout.mark_end(time.monotonic())
        if not finished:
            return Outcome(protocol, f"{mode} without its end")
        return _played(protocol, playout, answer.sent_at, first)
    finally:
        await answer.aclose()


def _framed_audio(mode: str, pending: bytes) -> tuple[bytes, bytes, bool]:
    """Audio of the whole events (SSE) or lines (ElevenLabs' JSON lines) in ``pending``; the
    rest; whether the stream's last event was among them."""
    separator = b"\n\n" if mode == "sse" else b"\n"
    *whole, rest = pending.split(separator)
    audio = b""
    ended = False
    for item in whole:
        if not item.strip():
            continue
        data = item.removeprefix(b"data: ") if mode == "sse" else item
        try:
            event = json.loads(data)
            if mode == "sse":
                ended = ended or event.get("type") == "speech.audio.done"
                audio += base64.b64decode(event.get("audio") or "")
            else:
                audio += base64.b64decode(event.get("audio_base64") or "")
        except (ValueError, binascii.Error, AttributeError) as error:
            raise MalformedAnswer(f"malformed {mode} item: {error!r}") from error
    # ElevenLabs' lines carry no end marker: a body that ends whole after a line is the end.
    return audio, rest, ended or (mode == "lines" and not rest and bool(whole))
