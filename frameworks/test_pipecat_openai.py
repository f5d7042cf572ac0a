"""Pipecat's OpenAITTSService (HTTP) against voxflow's `/v1/audio/speech`.

What it sends (pipecat-ai 1.14): one `POST /v1/audio/speech` per sentence of its sentence
aggregator, `{"input": SENTENCE, "model": "gpt-4o-mini-tts", "voice": "alloy",
"response_format": "pcm"}` through the openai SDK's streaming response, read as 24 kHz s16
PCM; the next sentence's request waits for the previous one's audio. A barge-in cancels the
request in flight (the SDK closes its connection). No word timestamps: it pushes each
sentence as text.
"""

from __future__ import annotations

import asyncio

import openai
import pytest
import voxflow_checks as checks
from pipecat.services.openai.tts import OpenAITTSService
from pipecat_harness import PipecatAgent, check_turn

FRAMEWORK = "pipecat openai"


@pytest.fixture
async def http_client():  # type: ignore[no-untyped-def]
    """The service never closes the AsyncOpenAI client it builds, so the agent brings its own
    (as the service's docs suggest) and closes it."""
    client = openai.DefaultAsyncHttpxClient()
    yield client
    await client.aclose()


def make_tts(voxflow, http_client) -> OpenAITTSService:  # type: ignore[no-untyped-def]
    return OpenAITTSService(
        api_key="unused", base_url=f"{voxflow.http_url}/v1", http_client=http_client
    )


async def test_reply_then_next_turn(voxflow, logs, http_client) -> None:  # type: ignore[no-untyped-def]
    c = checks.Checks(FRAMEWORK)
    async with PipecatAgent(make_tts(voxflow, http_client)) as agent:
        first = await agent.finish(await agent.reply(checks.REPLY))
        await check_turn(voxflow.http_url, first, c, FRAMEWORK, "reply", words=False)
        second = await agent.finish(await agent.reply(checks.NEXT_REPLY))
        await check_turn(voxflow.http_url, second, c, FRAMEWORK, "next turn", words=False)
    with c.check("errors"):
        assert not agent.errors, agent.errors
    with c.check("logs"):
        logs.assert_clean(FRAMEWORK)
    c.done()


@pytest.mark.parametrize("when", ["mid-reply", "after-flush"])
async def test_barge_in(voxflow, logs, http_client, when: str) -> None:  # type: ignore[no-untyped-def]
    c = checks.Checks(f"{FRAMEWORK} barge-in {when}")
    await checks.wait_server_idle(voxflow.http_url)
    async with PipecatAgent(make_tts(voxflow, http_client)) as agent:
        if when == "mid-reply":
            cut = checks.LONG_REPLY.index("The ride")
            turn = await agent.reply(checks.LONG_REPLY, interrupt_after_chars=cut)
        else:
            turn = await agent.reply(
                checks.VERY_LONG_REPLY, interval_s=checks.FAST_TOKEN_INTERVAL_S
            )
            await asyncio.sleep(0.3)
            with c.check("audio still coming at the barge-in"):
                assert not turn.ended.is_set(), "the reply's audio had all come already"
            await agent.interrupt(turn)
        with c.check("first audio"):
            checks.record_first_audio(FRAMEWORK, f"barge-in {when}", turn.first_audio_s)
        with c.check("server stops rendering"):
            await checks.assert_rendering_stops(voxflow.http_url, f"barge-in {when}")
        with c.check("no audio reaches the agent after the barge-in"):
            assert turn.audio_after_interruption == 0, turn.audio_after_interruption
        after = await agent.finish(await agent.reply(checks.REPLY))
        await check_turn(
            voxflow.http_url, after, c, FRAMEWORK, f"after barge-in {when}", words=False
        )
    with c.check("errors"):
        assert not agent.errors, agent.errors
    with c.check("logs"):
        logs.assert_clean(FRAMEWORK)
    c.done()


async def test_idle_pause_between_turns(voxflow, logs, http_client) -> None:  # type: ignore[no-untyped-def]
    c = checks.Checks(f"{FRAMEWORK} idle pause")
    async with PipecatAgent(make_tts(voxflow, http_client)) as agent:
        await agent.finish(await agent.reply(checks.NEXT_REPLY))
        await asyncio.sleep(3.0)
        turn = await agent.finish(await agent.reply(checks.REPLY))
        await check_turn(voxflow.http_url, turn, c, FRAMEWORK, "after idle pause", words=False)
    with c.check("errors"):
        assert not agent.errors, agent.errors
    with c.check("logs"):
        logs.assert_clean(FRAMEWORK)
    c.done()
