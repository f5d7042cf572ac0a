"""LiveKit Agents' Cartesia plugin (WebSocket, `/tts/websocket`) against voxflow.

What it sends (livekit-plugins-cartesia 1.8.9): a pooled connection per TTS (reused for up to
300 s), `ws://HOST/tts/websocket?cartesia_version=2025-04-16` with `X-API-Key`; per stream a
context: each sentence of its blingfire tokenizer as `{"model_id":"sonic-3","voice":{"mode":
"id","id":UUID},"output_format":{"container":"raw","encoding":"pcm_s16le","sample_rate":24000},
"language":"en","add_timestamps":true,"max_buffer_delay_ms":0,"context_id":C,"transcript":
"SENTENCE ","continue":true}` (a space added), at end of input the same with `"transcript":" "`
and `"continue":false`, then it reads until the context's `done`. It never sends `cancel`:
closing a stream (before or after end_input) cancels its tasks, and the pool drops the socket
without a word; that socket is closed only when the pool is next used (the next stream's
`connection()` drains the dropped ones) or closed. It pairs `word_timestamps` with the text
it sent and reads their times as from the start of the context.
"""

from __future__ import annotations

import aiohttp
import livekit_harness as lk
import pytest
from livekit.plugins import cartesia
from voxflow_checks import LONG_SENTENCE_REPLIES

FRAMEWORK = "livekit cartesia"


@pytest.fixture
async def tts(voxflow):  # type: ignore[no-untyped-def]
    async with aiohttp.ClientSession() as session:
        engine = cartesia.TTS(api_key="unused", base_url=voxflow.http_url, http_session=session)
        try:
            yield engine
        finally:
            await engine.aclose()


async def test_reply_then_next_turn(voxflow, tts, logs) -> None:  # type: ignore[no-untyped-def]
    await lk.scenario_reply_then_next_turn(tts, voxflow.http_url, logs, FRAMEWORK, aligned=True)


@pytest.mark.parametrize("when", ["mid-reply", "after-flush"])
async def test_barge_in(voxflow, tts, logs, when: str) -> None:  # type: ignore[no-untyped-def]
    # Closing a stream sends nothing (no `cancel`); the pool drops its socket, without a
    # message, when the next stream starts.
    await lk.scenario_barge_in(
        tts,
        voxflow.http_url,
        logs,
        FRAMEWORK,
        when,
        aligned=True,
        silent=frozenset({"mid-reply", "after-flush"}),
        socket_closed_by_next_stream=True,
    )


async def test_idle_pause_between_turns(voxflow, tts, logs) -> None:  # type: ignore[no-untyped-def]
    await lk.scenario_idle_pause(tts, voxflow.http_url, logs, FRAMEWORK, aligned=True)


@pytest.mark.parametrize("reply", list(LONG_SENTENCE_REPLIES))
async def test_long_reply(voxflow, tts, logs, reply: str) -> None:  # type: ignore[no-untyped-def]
    await lk.scenario_long_reply(tts, voxflow.http_url, logs, FRAMEWORK, reply, aligned=True)
