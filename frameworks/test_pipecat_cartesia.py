"""Pipecat's CartesiaTTSService (WebSocket) and CartesiaHttpTTSService against voxflow.

What they send (pipecat-ai 1.14): `CartesiaTTSService` connects to `ws://HOST/tts/websocket`
with `X-API-Key` and `Cartesia-Version: 2026-03-01`; per reply a new context, one message per
sentence of its sentence aggregator, `{"transcript": SENTENCE, "continue": true, "context_id":
C, "model_id": "sonic-3.6", "voice": {"mode": "id", "id": V}, "output_format": {"container":
"raw", "encoding": "pcm_s16le", "sample_rate": 24000}, "add_timestamps": true,
"use_normalized_timestamps": false, "max_buffer_delay_ms": 0, "language": "en"}`; at the
reply's end the same with `"transcript": ""` and `"continue": false`; on a barge-in
`{"context_id": C, "cancel": true}`. It ends a context's audio on `done`, reads `chunk`
(base64 PCM) and `timestamps` (word timestamps, which it pushes as TTSTextFrames), ignores
`flush_done`; no keep-alive (it reconnects when the socket closes).
`CartesiaHttpTTSService` sends one `POST /tts/bytes` per sentence, the same fields without
`continue`/`context_id`/timestamps, and reads the whole body as one audio frame.
"""

from __future__ import annotations

import asyncio

import aiohttp
import pytest
import voxflow_checks as checks
from pipecat.services.cartesia.tts import CartesiaHttpTTSService, CartesiaTTSService
from pipecat_harness import PipecatAgent, check_turn

FRAMEWORK = "pipecat cartesia"
FRAMEWORK_HTTP = "pipecat cartesia http"
# A Cartesia voice id, as a configuration copied from Cartesia has it: voxflow's default voice.
VOICE = "a0e99841-438c-4a64-b679-ae501e7d6091"


def make_tts(voxflow) -> CartesiaTTSService:  # type: ignore[no-untyped-def]
    return CartesiaTTSService(
        api_key="unused",
        url=f"{voxflow.ws_url}/tts/websocket",
        settings=CartesiaTTSService.Settings(voice=VOICE),
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
            # The whole reply sent and its context ended (`continue: false`); its audio
            # still coming.
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


@pytest.fixture
async def aiohttp_session():  # type: ignore[no-untyped-def]
    """The agent's own session (the service would otherwise make one), closed at the end."""
    session = aiohttp.ClientSession()
    yield session
    await session.close()


async def test_http_reply(voxflow, logs, aiohttp_session) -> None:  # type: ignore[no-untyped-def]
    c = checks.Checks(FRAMEWORK_HTTP)
    tts = CartesiaHttpTTSService(
        api_key="unused",
        base_url=voxflow.http_url,
        aiohttp_session=aiohttp_session,
        settings=CartesiaHttpTTSService.Settings(voice=VOICE),
    )
    async with PipecatAgent(tts) as agent:
        turn = await agent.finish(await agent.reply(checks.REPLY))
        await check_turn(voxflow.http_url, turn, c, FRAMEWORK_HTTP, "reply", words=False)
    with c.check("errors"):
        assert not agent.errors, agent.errors
    with c.check("logs"):
        logs.assert_clean(FRAMEWORK_HTTP)
    c.done()
