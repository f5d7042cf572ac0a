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

import aiohttp
import pytest
from pipecat.services.deepgram.tts import DeepgramHttpTTSService, DeepgramTTSService
from pipecat_harness import (
    scenario_barge_in,
    scenario_idle_pause,
    scenario_long_reply,
    scenario_one_reply,
    scenario_reply_then_next_turn,
)
from voxflow_checks import LONG_SENTENCE_REPLIES

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
    await scenario_reply_then_next_turn(
        lambda: make_tts(voxflow), voxflow.http_url, logs, FRAMEWORK, words=False
    )


@pytest.mark.parametrize("when", ["mid-reply", "after-flush"])
async def test_barge_in(voxflow, logs, when: str) -> None:  # type: ignore[no-untyped-def]
    await scenario_barge_in(
        lambda: make_tts(voxflow), voxflow.http_url, logs, FRAMEWORK, when, words=False
    )


async def test_idle_pause_between_turns(voxflow, logs) -> None:  # type: ignore[no-untyped-def]
    await scenario_idle_pause(
        lambda: make_tts(voxflow), voxflow.http_url, logs, FRAMEWORK, words=False
    )


@pytest.mark.parametrize("reply", list(LONG_SENTENCE_REPLIES))
async def test_long_reply(voxflow, logs, reply: str) -> None:  # type: ignore[no-untyped-def]
    await scenario_long_reply(
        lambda: make_tts(voxflow), voxflow.http_url, logs, FRAMEWORK, reply, words=False
    )


@pytest.fixture
async def aiohttp_session():  # type: ignore[no-untyped-def]
    """The service needs the agent's session (it never makes one); closed at the end."""
    session = aiohttp.ClientSession()
    yield session
    await session.close()


async def test_http_reply(voxflow, logs, aiohttp_session) -> None:  # type: ignore[no-untyped-def]
    tts = DeepgramHttpTTSService(
        api_key="unused",
        base_url=voxflow.http_url,
        aiohttp_session=aiohttp_session,
        settings=DeepgramHttpTTSService.Settings(voice=VOICE),
    )
    await scenario_one_reply(tts, voxflow.http_url, logs, FRAMEWORK_HTTP)
