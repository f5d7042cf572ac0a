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

import livekit_harness as lk
import pytest
from livekit.agents import tts as lk_tts
from livekit.plugins import openai
from voxflow_checks import LONG_SENTENCE_REPLIES

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
    await lk.scenario_reply_then_next_turn(tts, voxflow.http_url, logs, FRAMEWORK, aligned=True)


@pytest.mark.parametrize("when", ["mid-reply", "after-flush"])
async def test_barge_in(voxflow, tts, logs, when: str) -> None:  # type: ignore[no-untyped-def]
    # Closing a stream closes its request in flight.
    await lk.scenario_barge_in(
        tts,
        voxflow.http_url,
        logs,
        FRAMEWORK,
        when,
        aligned=True,
        silent=frozenset(),
        socket_closed_by_next_stream=False,
    )


async def test_idle_pause_between_turns(voxflow, tts, logs) -> None:  # type: ignore[no-untyped-def]
    await lk.scenario_idle_pause(tts, voxflow.http_url, logs, FRAMEWORK, aligned=True)


@pytest.mark.parametrize("reply", list(LONG_SENTENCE_REPLIES))
async def test_long_reply(voxflow, tts, logs, reply: str) -> None:  # type: ignore[no-untyped-def]
    # The adapter's aligned transcript is one entry per sentence.
    await lk.scenario_long_reply(
        tts, voxflow.http_url, logs, FRAMEWORK, reply, aligned=True, word_by_word=False
    )
