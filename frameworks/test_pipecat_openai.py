"""Pipecat's OpenAITTSService (HTTP) against voxflow's `/v1/audio/speech`.

What it sends (pipecat-ai 1.14): one `POST /v1/audio/speech` per sentence of its sentence
aggregator, `{"input": SENTENCE, "model": "gpt-4o-mini-tts", "voice": "alloy",
"response_format": "pcm"}` through the openai SDK's streaming response, read as 24 kHz s16
PCM; the next sentence's request waits for the previous one's audio. A barge-in cancels the
request in flight (the SDK closes its connection). No word timestamps: it pushes each
sentence as text.
"""

from __future__ import annotations

import openai
import pytest
from pipecat.services.openai.tts import OpenAITTSService
from pipecat_harness import (
    scenario_barge_in,
    scenario_idle_pause,
    scenario_long_reply,
    scenario_reply_then_next_turn,
)
from voxflow_checks import LONG_SENTENCE_REPLIES

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
    await scenario_reply_then_next_turn(
        lambda: make_tts(voxflow, http_client), voxflow.http_url, logs, FRAMEWORK, words=False
    )


@pytest.mark.parametrize("when", ["mid-reply", "after-flush"])
async def test_barge_in(voxflow, logs, http_client, when: str) -> None:  # type: ignore[no-untyped-def]
    await scenario_barge_in(
        lambda: make_tts(voxflow, http_client), voxflow.http_url, logs, FRAMEWORK, when, words=False
    )


async def test_idle_pause_between_turns(voxflow, logs, http_client) -> None:  # type: ignore[no-untyped-def]
    await scenario_idle_pause(
        lambda: make_tts(voxflow, http_client), voxflow.http_url, logs, FRAMEWORK, words=False
    )


@pytest.mark.parametrize("reply", list(LONG_SENTENCE_REPLIES))
async def test_long_reply(voxflow, logs, http_client, reply: str) -> None:  # type: ignore[no-untyped-def]
    await scenario_long_reply(
        lambda: make_tts(voxflow, http_client),
        voxflow.http_url,
        logs,
        FRAMEWORK,
        reply,
        words=False,
    )
