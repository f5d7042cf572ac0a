"""Pipecat's DeepgramTTSService (WebSocket) and DeepgramHttpTTSService against voxflow.

What they send (pipecat-ai 1.14): `DeepgramTTSService` connects to `ws://HOST/v1/speak?model=
aura-2-helena-en&encoding=linear16&sample_rate=24000` with `Authorization: Token KEY` when the
pipeline starts; one `{"type": "Speak", "text": SENTENCE + " "}` per sentence of its sentence
aggregator, `{"type": "Flush"}` at the reply's end (it ends the reply's audio on `Flushed`),
`{"type": "Clear"}` on a barge-in (`Cleared` is only logged), `{"type": "Close"}` and a socket
close when the pipeline ends. Audio comes as binary frames, which it files under the context
playing (Deepgram's messages name none); a `Warning` is logged as a warning. No word
timestamps: it pushes each sentence as text.
`DeepgramHttpTTSService` sends one `POST /v1/speak?model=...&encoding=linear16&sample_rate=
24000&container=none`, body `{"text": SENTENCE}`, per sentence, and streams the PCM it reads.
"""

from __future__ import annotations

import asyncio

import aiohttp
import pytest
import voxflow_checks as checks
from pipecat.services.deepgram.tts import DeepgramHttpTTSService, DeepgramTTSService
from pipecat_harness import PipecatAgent, check_turn

FRAMEWORK = "pipecat deepgram"
FRAMEWORK_HTTP = "pipecat deepgram http"
# A Deepgram Aura model name, as a configuration copied from Deepgram has it: voxflow's
# default voice.
VOICE = "aura-2-thalia-en"


def make_tts(voxflow) -> DeepgramTTSService:  # type: ignore[no-untyped-def]
    return DeepgramTTSService(
        api_key="unused",
        base_url=voxflow.ws_url,
        settings=DeepgramTTSService.Settings(voice=VOICE),
    )


async def test_reply_then_next_turn(voxflow, logs) -> None:  # type: ignore[no-untyped-def]
    c = checks.Checks(FRAMEWORK)
    async with PipecatAgent(make_tts(voxflow)) as agent:
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
async def test_barge_in(voxflow, logs, when: str) -> None:  # type: ignore[no-untyped-def]
    c = checks.Checks(f"{FRAMEWORK} barge-in {when}")
    await checks.wait_server_idle(voxflow.http_url)
    async with PipecatAgent(make_tts(voxflow)) as agent:
        if when == "mid-reply":
            # Two sentences sent, audio playing, the LLM still streaming.
            cut = checks.LONG_REPLY.index("The ride")
            turn = await agent.reply(checks.LONG_REPLY, interrupt_after_chars=cut)
        else:
            # The whole reply sent and flushed (`Flush`); its audio still coming.
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
        # The same service (the same socket) speaks the next reply whole.
        after = await agent.finish(await agent.reply(checks.REPLY))
        await check_turn(
            voxflow.http_url, after, c, FRAMEWORK, f"after barge-in {when}", words=False
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
        await check_turn(voxflow.http_url, turn, c, FRAMEWORK, "after idle pause", words=False)
    with c.check("errors"):
        assert not agent.errors, agent.errors
    with c.check("logs"):
        logs.assert_clean(FRAMEWORK)
    c.done()


@pytest.fixture
async def aiohttp_session():  # type: ignore[no-untyped-def]
    """The service needs the agent's session (it never makes one); closed at the end."""
    session = aiohttp.ClientSession()
    yield session
    await session.close()


async def test_http_reply(voxflow, logs, aiohttp_session) -> None:  # type: ignore[no-untyped-def]
    c = checks.Checks(FRAMEWORK_HTTP)
    tts = DeepgramHttpTTSService(
        api_key="unused",
        base_url=voxflow.http_url,
        aiohttp_session=aiohttp_session,
        settings=DeepgramHttpTTSService.Settings(voice=VOICE),
    )
    async with PipecatAgent(tts) as agent:
        turn = await agent.finish(await agent.reply(checks.REPLY))
        await check_turn(voxflow.http_url, turn, c, FRAMEWORK_HTTP, "reply", words=False)
    with c.check("errors"):
        assert not agent.errors, agent.errors
    with c.check("logs"):
        logs.assert_clean(FRAMEWORK_HTTP)
    c.done()
