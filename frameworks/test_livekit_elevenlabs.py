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

import asyncio

import aiohttp
import livekit_harness as lk
import pytest
import voxflow_checks as checks
from livekit.plugins import elevenlabs

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
    c = checks.Checks(FRAMEWORK)
    first = await lk.reply(tts, checks.REPLY).finish()
    await lk.check_turn(voxflow.http_url, first, c, FRAMEWORK, "reply")
    second = await lk.reply(tts, checks.NEXT_REPLY).finish()  # same connection
    await lk.check_turn(voxflow.http_url, second, c, FRAMEWORK, "next turn")
    with c.check("logs"):
        logs.assert_clean(FRAMEWORK)
    c.done()


@pytest.mark.parametrize("when", ["mid-reply", "after-flush"])
async def test_barge_in(voxflow, tts, logs, when: str) -> None:  # type: ignore[no-untyped-def]
    c = checks.Checks(f"{FRAMEWORK} barge-in {when}")
    await checks.wait_server_idle(voxflow.http_url)
    if when == "mid-reply":
        speaking = lk.reply_cut_at(tts, checks.LONG_REPLY, checks.LONG_REPLY.index("The ride"))
        await speaking.sent()
    else:
        speaking = lk.reply(tts, checks.VERY_LONG_REPLY, interval_s=checks.FAST_TOKEN_INTERVAL_S)
        await speaking.sent()
        await asyncio.sleep(0.3)
        with c.check("audio still coming at the barge-in"):
            assert not speaking.turn.done.is_set(), "the reply's audio had all come already"
    await speaking.wait_audio()
    await speaking.barge_in()
    with c.check("first audio"):
        checks.record_first_audio(FRAMEWORK, f"barge-in {when}", speaking.turn.first_audio_s)
    with c.check("no audio reaches the agent after the barge-in"):
        assert speaking.turn.audio_after_close == 0, speaking.turn.audio_after_close
    if when == "mid-reply":
        with c.check("server stops rendering"):
            await checks.assert_rendering_stops(voxflow.http_url, f"barge-in {when}")
    else:
        # After end_input the plugin has already sent flush + close_context, and closing the
        # stream sends nothing more: the server cannot tell a barge-in from a listener who
        # is still listening, so, as ElevenLabs does, it renders the rest of the reply (paced
        # to playback). Reported in the summary, not asserted: nothing reaches the server.
        before = await checks.metrics(voxflow.http_url)
        try:
            await checks.assert_rendering_stops(voxflow.http_url, f"barge-in {when}")
            checks.NOTES.append(f"{FRAMEWORK} barge-in {when}: the server stopped rendering")
        except AssertionError as e:
            after_s = await checks.metrics(voxflow.http_url)
            cpu = after_s["process_cpu_seconds_total"] - before["process_cpu_seconds_total"]
            checks.NOTES.append(
                f"{FRAMEWORK} barge-in {when} (no message reaches the server): {e}; "
                f"server CPU in that time {cpu:.2f} s"
            )
    after = await lk.reply(tts, checks.REPLY).finish()
    await lk.check_turn(voxflow.http_url, after, c, FRAMEWORK, f"after barge-in {when}")
    with c.check("logs"):
        logs.assert_clean(FRAMEWORK)
    c.done()


async def test_idle_pause_between_turns(voxflow, tts, logs) -> None:  # type: ignore[no-untyped-def]
    c = checks.Checks(f"{FRAMEWORK} idle pause")
    await lk.reply(tts, checks.NEXT_REPLY).finish()
    await asyncio.sleep(3.0)
    turn = await lk.reply(tts, checks.REPLY).finish()
    await lk.check_turn(voxflow.http_url, turn, c, FRAMEWORK, "after idle pause")
    with c.check("logs"):
        logs.assert_clean(FRAMEWORK)
    c.done()
