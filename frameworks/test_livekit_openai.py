"""LiveKit Agents' OpenAI plugin against voxflow's `/v1/audio/speech`.

The plugin's TTS does not stream text (capabilities.streaming is False), so an AgentSession
wraps it in `tts.StreamAdapter`: a blingfire sentence tokenizer, then one
`openai.AsyncClient.audio.speech.with_streaming_response.create(input=SENTENCE,
model="gpt-4o-mini-tts", voice="ash", response_format="mp3", speed=1.0,
stream_format="sse")` per sentence, one after the other (livekit-plugins-openai 1.8.9). It
parses the body by its Content-Type (SSE `speech.audio.delta` events here), decodes the MP3,
and takes the request id from the `x-request-id` response header (AudioEmitter warns "no
request_id provided for TTS" when it is missing). The aligned transcript is one timed entry
per sentence. A barge-in closes the stream, which cancels the HTTP request in flight.
"""

from __future__ import annotations

import asyncio

import livekit_harness as lk
import pytest
import voxflow_checks as checks
from livekit.agents import tts as lk_tts
from livekit.plugins import openai

FRAMEWORK = "livekit openai"


@pytest.fixture
async def tts(voxflow):  # type: ignore[no-untyped-def]
    engine = openai.TTS(base_url=f"{voxflow.http_url}/v1", api_key="unused")
    adapter = lk_tts.StreamAdapter(tts=engine)
    try:
        yield adapter
    finally:
        await adapter.aclose()
        await engine.aclose()


async def test_reply_then_next_turn(voxflow, tts, logs) -> None:  # type: ignore[no-untyped-def]
    c = checks.Checks(FRAMEWORK)
    first = await lk.reply(tts, checks.REPLY).finish()
    await lk.check_turn(voxflow.http_url, first, c, FRAMEWORK, "reply")
    second = await lk.reply(tts, checks.NEXT_REPLY).finish()
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
    with c.check("server stops rendering"):
        await checks.assert_rendering_stops(voxflow.http_url, f"barge-in {when}")
    after = await lk.reply(tts, checks.REPLY).finish()
    await lk.check_turn(voxflow.http_url, after, c, FRAMEWORK, f"after barge-in {when}")
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
