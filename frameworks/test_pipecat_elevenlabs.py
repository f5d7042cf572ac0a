"""Pipecat's ElevenLabsTTSService (WebSocket, multi-stream-input) against voxflow.

What it sends (pipecat-ai 1.14): `ws://HOST/v1/text-to-speech/joe/multi-stream-input?model_id=
eleven_flash_v2_5&output_format=pcm_24000&auto_mode=true` with `xi-api-key`; per reply a new
context: `{"text":" ","context_id":C}`, then one `{"text":SENTENCE,"context_id":C}` per sentence
of its sentence aggregator, at the reply's end `{"context_id":C,"flush":true}` and at once
`{"context_id":C,"close_context":true}`; on a barge-in `close_context` again for the context;
`{"close_socket":true}` when the pipeline ends; a keep-alive `{"text":""...}` every 10 s.
"""

from __future__ import annotations

import asyncio

import pytest
import voxflow_checks as checks
from pipecat.services.elevenlabs.tts import ElevenLabsTTSService
from pipecat_harness import PipecatAgent, check_turn

FRAMEWORK = "pipecat elevenlabs"


def make_tts(voxflow) -> ElevenLabsTTSService:  # type: ignore[no-untyped-def]
    return ElevenLabsTTSService(
        api_key="unused",
        url=voxflow.ws_url,
        settings=ElevenLabsTTSService.Settings(voice="joe"),
    )


async def test_reply_then_next_turn(voxflow, logs) -> None:  # type: ignore[no-untyped-def]
    c = checks.Checks(FRAMEWORK)
    async with PipecatAgent(make_tts(voxflow)) as agent:
        first = await agent.finish(await agent.reply(checks.REPLY))
        await check_turn(voxflow.http_url, first, c, FRAMEWORK, "reply", words=True)
        second = await agent.finish(await agent.reply(checks.NEXT_REPLY))
        await check_turn(voxflow.http_url, second, c, FRAMEWORK, "next turn", words=True)
    with c.check("errors"):
        assert not agent.errors, agent.errors
    with c.check("logs"):
        logs.assert_clean(FRAMEWORK)
    c.done()


@pytest.mark.parametrize("when", ["mid-reply", "after-flush"])
async def test_barge_in(voxflow, logs, when: str) -> None:  # type: ignore[no-untyped-def]
    c = checks.Checks(f"{FRAMEWORK} barge-in {when}")
    await checks.wait_server_idle(voxflow.http_url)
    async with PipecatAgent(make_tts(voxflow)) as agent:
        if when == "mid-reply":
            # Two sentences sent, audio playing, the LLM still streaming.
            cut = checks.LONG_REPLY.index("The ride")
            turn = await agent.reply(checks.LONG_REPLY, interrupt_after_chars=cut)
        else:
            # The whole reply sent and flushed; its audio still coming.
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
        # The same service speaks the next reply whole.
        after = await agent.finish(await agent.reply(checks.REPLY))
        await check_turn(
            voxflow.http_url, after, c, FRAMEWORK, f"after barge-in {when}", words=True
        )
    with c.check("errors"):
        assert not agent.errors, agent.errors
    with c.check("logs"):
        logs.assert_clean(FRAMEWORK)
    c.done()


async def test_idle_pause_between_turns(voxflow, logs) -> None:  # type: ignore[no-untyped-def]
    c = checks.Checks(f"{FRAMEWORK} idle pause")
    async with PipecatAgent(make_tts(voxflow)) as agent:
        await agent.finish(await agent.reply(checks.NEXT_REPLY))
        await asyncio.sleep(3.0)
        turn = await agent.finish(await agent.reply(checks.REPLY))
        await check_turn(voxflow.http_url, turn, c, FRAMEWORK, "after idle pause", words=True)
    with c.check("errors"):
        assert not agent.errors, agent.errors
    with c.check("logs"):
        logs.assert_clean(FRAMEWORK)
    c.done()
