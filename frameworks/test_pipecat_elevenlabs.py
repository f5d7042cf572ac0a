"""Pipecat's ElevenLabsTTSService (WebSocket, multi-stream-input) against voxflow.

What it sends (pipecat-ai 1.14): `ws://HOST/v1/text-to-speech/joe/multi-stream-input?model_id=
eleven_flash_v2_5&output_format=pcm_24000&auto_mode=true` with `xi-api-key`; per reply a new
context: `{"text":" ","context_id":C}`, then one `{"text":SENTENCE,"context_id":C}` per sentence
of its sentence aggregator, at the reply's end `{"context_id":C,"flush":true}` and at once
`{"context_id":C,"close_context":true}`; on a barge-in `close_context` again for the context;
`{"close_socket":true}` when the pipeline ends; a keep-alive `{"text":""...}` every 10 s.
With `text_aggregation_mode=TextAggregationMode.TOKEN` the URL has `auto_mode=false` and each
LLM token goes as it comes, `{"text":TOKEN,"context_id":C}`; the reply's end is the same.
"""

from __future__ import annotations

import pytest
from pipecat.services.elevenlabs.tts import ElevenLabsTTSService
from pipecat.services.tts_service import TextAggregationMode
from pipecat_harness import (
    scenario_barge_in,
    scenario_idle_pause,
    scenario_long_reply,
    scenario_reply_then_next_turn,
)
from voxflow_checks import LONG_SENTENCE_REPLIES

FRAMEWORK = "pipecat elevenlabs"


def make_tts(  # type: ignore[no-untyped-def]
    voxflow, mode: TextAggregationMode | None = None
) -> ElevenLabsTTSService:
    return ElevenLabsTTSService(
        api_key="unused",
        url=voxflow.ws_url,
        settings=ElevenLabsTTSService.Settings(voice="joe"),
        text_aggregation_mode=mode,
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


# The default (sentence aggregation, `auto_mode=true`) and TOKEN mode: each LLM token sent as it
# comes (`auto_mode=false`), so the server, not Pipecat, finds the sentences.
@pytest.mark.parametrize("mode", [None, TextAggregationMode.TOKEN], ids=["default", "token"])
@pytest.mark.parametrize("reply", list(LONG_SENTENCE_REPLIES))
async def test_long_reply(  # type: ignore[no-untyped-def]
    voxflow, logs, reply: str, mode: TextAggregationMode | None
) -> None:
    framework = FRAMEWORK if mode is None else f"{FRAMEWORK} {mode}"
    await scenario_long_reply(
        lambda: make_tts(voxflow, mode), voxflow.http_url, logs, framework, reply, words=True
    )
