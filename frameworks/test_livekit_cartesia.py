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

import asyncio

import aiohttp
import livekit_harness as lk
import pytest
import voxflow_checks as checks
from livekit.plugins import cartesia

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
    c = checks.Checks(FRAMEWORK)
    first = await lk.reply(tts, checks.REPLY).finish()
    await lk.check_turn(voxflow.http_url, first, c, FRAMEWORK, "reply")
    second = await lk.reply(tts, checks.NEXT_REPLY).finish()  # same pooled connection
    await lk.check_turn(voxflow.http_url, second, c, FRAMEWORK, "next turn")
    with c.check("logs"):
        logs.assert_clean(FRAMEWORK)
    c.done()


@pytest.mark.parametrize("when", ["mid-reply", "after-flush"])
async def test_barge_in(voxflow, tts, logs, when: str) -> None:  # type: ignore[no-untyped-def]
    c = checks.Checks(f"{FRAMEWORK} barge-in {when}")
    await checks.wait_server_idle(voxflow.http_url)
    if when == "mid-reply":
        speaking = lk.reply_cut_at(tts, checks.LONG_REPLY, checks.LONG_REPLY.index("The ride"))
        await speaking.sent()
    else:
        speaking = lk.reply(tts, checks.VERY_LONG_REPLY, interval_s=checks.FAST_TOKEN_INTERVAL_S)
        await speaking.sent()
        await asyncio.sleep(0.3)
        with c.check("audio still coming at the barge-in"):
            assert not speaking.turn.done.is_set(), "the reply's audio had all come already"
    await speaking.wait_audio()
    await speaking.barge_in()
    with c.check("first audio"):
        checks.record_first_audio(FRAMEWORK, f"barge-in {when}", speaking.turn.first_audio_s)
    with c.check("no audio reaches the agent after the barge-in"):
        assert speaking.turn.audio_after_close == 0, speaking.turn.audio_after_close
    # Closing the stream sends nothing (no `cancel`, and the socket stays open until the pool
    # is next used): the server cannot tell the barge-in from a listener who is still
    # listening. Mid-reply its context stays open (continue: true) until voxflow's 60 s
    # idle end; after end_input (continue: false) voxflow renders the rest of the reply,
    # paced to playback, as Cartesia would. Reported in the summary, not asserted.
    try:
        await checks.assert_rendering_stops(voxflow.http_url, f"barge-in {when}")
        checks.NOTES.append(f"{FRAMEWORK} barge-in {when}: the server stopped rendering")
    except AssertionError as e:
        checks.NOTES.append(f"{FRAMEWORK} barge-in {when} (no message reaches the server): {e}")
    # The next stream closes the dropped socket: then the interrupted context must stop.
    after = await lk.reply(tts, checks.REPLY).finish()
    await lk.check_turn(voxflow.http_url, after, c, FRAMEWORK, f"after barge-in {when}")
    with c.check("server stops once the plugin closes the interrupted reply's socket"):
        await checks.assert_rendering_stops(voxflow.http_url, f"barge-in {when}, socket closed")
    with c.check("logs"):
        logs.assert_clean(FRAMEWORK)
    c.done()


async def test_idle_pause_between_turns(voxflow, tts, logs) -> None:  # type: ignore[no-untyped-def]
    c = checks.Checks(f"{FRAMEWORK} idle pause")
    await lk.reply(tts, checks.NEXT_REPLY).finish()
    await asyncio.sleep(3.0)
    turn = await lk.reply(tts, checks.REPLY).finish()
    await lk.check_turn(voxflow.http_url, turn, c, FRAMEWORK, "after idle pause")
    with c.check("logs"):
        logs.assert_clean(FRAMEWORK)
    c.done()
