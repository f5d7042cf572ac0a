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

import aiohttp
import pytest
from pipecat.services.cartesia.tts import CartesiaHttpTTSService, CartesiaTTSService
from pipecat_harness import (
    scenario_barge_in,
    scenario_idle_pause,
    scenario_long_reply,
    scenario_one_reply,
    scenario_reply_then_next_turn,
)
from voxflow_checks import LONG_SENTENCE_REPLIES

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
    await scenario_reply_then_next_turn(
        lambda: make_tts(voxflow), voxflow.http_url, logs, FRAMEWORK, words=True
    )


@pytest.mark.parametrize("when", ["mid-reply", "after-flush"])
async def test_barge_in(voxflow, logs, when: str) -> None:  # type: ignore[no-untyped-def]
    await scenario_barge_in(
        lambda: make_tts(voxflow), voxflow.http_url, logs, FRAMEWORK, when, words=True
    )


async def test_idle_pause_between_turns(voxflow, logs) -> None:  # type: ignore[no-untyped-def]
    await scenario_idle_pause(
        lambda: make_tts(voxflow), voxflow.http_url, logs, FRAMEWORK, words=True
    )


@pytest.fixture
async def aiohttp_session():  # type: ignore[no-untyped-def]
    """The agent's own session (the service would otherwise make one), closed at the end."""
    session = aiohttp.ClientSession()
    yield session
    await session.close()


async def test_http_reply(voxflow, logs, aiohttp_session) -> None:  # type: ignore[no-untyped-def]
    tts = CartesiaHttpTTSService(
        api_key="unused",
        base_url=voxflow.http_url,
        aiohttp_session=aiohttp_session,
        settings=CartesiaHttpTTSService.Settings(voice=VOICE),
    )
    await scenario_one_reply(tts, voxflow.http_url, logs, FRAMEWORK_HTTP)


@pytest.mark.parametrize("reply", list(LONG_SENTENCE_REPLIES))
async def test_long_reply(voxflow, logs, reply: str) -> None:  # type: ignore[no-untyped-def]
    await scenario_long_reply(
        lambda: make_tts(voxflow), voxflow.http_url, logs, FRAMEWORK, reply, words=True
    )
