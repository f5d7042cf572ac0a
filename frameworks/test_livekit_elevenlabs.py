"""LiveKit Agents' ElevenLabs plugin (WebSocket, multi-stream-input) against voxflow.

What it sends (livekit-plugins-elevenlabs 1.8.9): one shared connection per TTS,
`ws://HOST/v1/text-to-speech/joe/multi-stream-input?model_id=eleven_turbo_v2_5&output_format=
pcm_24000&enable_ssml_parsing=false&enable_logging=true&inactivity_timeout=180&
apply_text_normalization=auto&sync_alignment=true&auto_mode=true` with `xi-api-key`; per
stream a context: an init packet `{"text":" ","voice_settings":...,"context_id":C}`, then each
sentence of its blingfire tokenizer as `{"text":"SENTENCE ","context_id":C,"flush":true}`
(auto_mode: a flush per sentence, a trailing space added), at end of input
`{"text":"","context_id":C,"flush":true}` and `{"context_id":C,"close_context":true}`. Closing
a stream before its input ended sends `close_context` (nothing else: there is no "immediate"
or cancel message); closing it after end_input sends nothing at all. It reads `alignment`
(`normalizedAlignment` by default) as times from the start of the context.
"""

from __future__ import annotations

import aiohttp
import livekit_harness as lk
import pytest
from livekit.plugins import elevenlabs
from voxflow_checks import LONG_SENTENCE_REPLIES

FRAMEWORK = "livekit elevenlabs"


@pytest.fixture
async def tts(voxflow):  # type: ignore[no-untyped-def]
    async with aiohttp.ClientSession() as session:
        engine = elevenlabs.TTS(
            voice_id="joe",
            api_key="unused",
            base_url=f"{voxflow.http_url}/v1",
            # What docs/integrations.md recommends: PCM plays at once, while the plugin's
            # default MP3 (mp3_22050_32) waits for its decoder.
            encoding="pcm_24000",
            http_session=session,
        )
        try:
            yield engine
        finally:
            await engine.aclose()


async def test_reply_then_next_turn(voxflow, tts, logs) -> None:  # type: ignore[no-untyped-def]
    await lk.scenario_reply_then_next_turn(tts, voxflow.http_url, logs, FRAMEWORK, aligned=True)


@pytest.mark.parametrize("when", ["mid-reply", "after-flush"])
async def test_barge_in(voxflow, tts, logs, when: str) -> None:  # type: ignore[no-untyped-def]
    # After end_input the plugin has already sent flush + close_context, and closing the
    # stream sends nothing more; before it, closing sends close_context with text unflushed.
    await lk.scenario_barge_in(
        tts,
        voxflow.http_url,
        logs,
        FRAMEWORK,
        when,
        aligned=True,
        silent=frozenset({"after-flush"}),
        socket_closed_by_next_stream=False,
    )


async def test_idle_pause_between_turns(voxflow, tts, logs) -> None:  # type: ignore[no-untyped-def]
    await lk.scenario_idle_pause(tts, voxflow.http_url, logs, FRAMEWORK, aligned=True)


@pytest.mark.parametrize("reply", list(LONG_SENTENCE_REPLIES))
async def test_long_reply(voxflow, tts, logs, reply: str) -> None:  # type: ignore[no-untyped-def]
    await lk.scenario_long_reply(tts, voxflow.http_url, logs, FRAMEWORK, reply, aligned=True)
