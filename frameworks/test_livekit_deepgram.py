"""LiveKit Agents' Deepgram plugin (WebSocket, `/v1/speak`) against voxflow.

What it sends (livekit-plugins-deepgram 1.8.9): a pooled connection per TTS (reused for up to
an hour), `ws://HOST/v1/speak?encoding=linear16&model=aura-2-andromeda-en&sample_rate=24000&
mip_opt_out=false` with `Authorization: Token KEY`; per segment (the text up to a `flush()`)
one `{"type":"Speak","text":"WORD "}` per word of its basic word tokenizer (punctuation kept
on the word), then `{"type":"Flush"}`, and it reads audio until `Flushed`. It never sends
`Clear`: closing a stream (before or after end_input) cancels its tasks and the pool drops
the socket without a word; when the pool next runs (the next stream's `connection()`) or
closes, it sends the dropped socket `Flush` and `Close`, waits up to 1 s for one message and
closes it. The plugin gives no word timings (`aligned_transcript` is False).
"""

from __future__ import annotations

import asyncio

import aiohttp
import livekit_harness as lk
import pytest
import voxflow_checks as checks
from livekit.plugins import deepgram

FRAMEWORK = "livekit deepgram"


@pytest.fixture
async def tts(voxflow):  # type: ignore[no-untyped-def]
    async with aiohttp.ClientSession() as session:
        engine = deepgram.TTS(
            api_key="unused", base_url=f"{voxflow.http_url}/v1/speak", http_session=session
        )
        try:
            yield engine
        finally:
            await engine.aclose()


async def test_reply_then_next_turn(voxflow, tts, logs) -> None:  # type: ignore[no-untyped-def]
    c = checks.Checks(FRAMEWORK)
    first = await lk.reply(tts, checks.REPLY).finish()
    await lk.check_turn(voxflow.http_url, first, c, FRAMEWORK, "reply", aligned=False)
    second = await lk.reply(tts, checks.NEXT_REPLY).finish()  # same pooled connection
    await lk.check_turn(voxflow.http_url, second, c, FRAMEWORK, "next turn", aligned=False)
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
    # Closing the stream sends nothing (no `Clear`, and the socket stays open until the pool
    # is next used): the server cannot tell the barge-in from a listener who is still
    # listening. Mid-reply the turn was never flushed; after end_input (Flush sent) voxflow
    # renders the rest of the reply, paced to playback, as Deepgram would. Reported in the
    # summary, not asserted.
    try:
        await checks.assert_rendering_stops(voxflow.http_url, f"barge-in {when}")
        checks.NOTES.append(f"{FRAMEWORK} barge-in {when}: the server stopped rendering")
    except AssertionError as e:
        checks.NOTES.append(f"{FRAMEWORK} barge-in {when} (no message reaches the server): {e}")
    # The next stream sends the dropped socket Flush and Close, waits up to 1 s for a message
    # and closes it: then the interrupted turn must stop.
    after = await lk.reply(tts, checks.REPLY).finish()
    await lk.check_turn(
        voxflow.http_url, after, c, FRAMEWORK, f"after barge-in {when}", aligned=False
    )
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
    await lk.check_turn(voxflow.http_url, turn, c, FRAMEWORK, "after idle pause", aligned=False)
    with c.check("logs"):
        logs.assert_clean(FRAMEWORK)
    c.done()
