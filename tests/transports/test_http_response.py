"""Whole-text HTTP requests are not paced like live streams: they render as fast as the workers
allow, so a long text's wall time is a small fraction of its audio, with the real client SDKs."""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager

import httpx
import openai
from elevenlabs.client import ElevenLabs

TEXT = (
    "The quick brown fox jumps over the lazy dog while the orchestra, tuning its instruments "
    "in the distance, prepares for a long evening of music that nobody will forget. "
) * 3

ServerFactory = Callable[..., AbstractContextManager[str]]


def test_http_requests_render_faster_than_playback_past_the_lead_cap(
    server_factory: ServerFactory,
) -> None:
    # A live stream on this server is held within 0.5 s of its listener: paced, this text's
    # ~27 s of audio would take ~26 s to arrive.
    with server_factory(max_lead_s=0.5, workers=2) as url:
        client = openai.OpenAI(base_url=url + "/v1", api_key="unused", max_retries=0)
        with client:
            client.audio.speech.create(model="tts-1", voice="alloy", input="Hi.")  # warm up
            started = time.monotonic()
            with client.audio.speech.with_streaming_response.create(
                model="tts-1", voice="alloy", input=TEXT, response_format="pcm"
            ) as response:
                data = response.read()
            openai_wall = time.monotonic() - started
        openai_audio = len(data) / 2 / 24000
        with httpx.Client(timeout=120) as http:
            eleven = ElevenLabs(base_url=url, api_key="unused", httpx_client=http)
            started = time.monotonic()
            data = b"".join(
                eleven.text_to_speech.stream(voice_id="joe", text=TEXT, output_format="pcm_24000")
            )
            eleven_wall = time.monotonic() - started
        eleven_audio = len(data) / 2 / 24000
    assert openai_audio > 20 and eleven_audio > 20
    # Rendering costs ~5% of real time on two idle cores; half of real time leaves room for a
    # busy machine and still fails by far if the lead cap applied.
    assert openai_wall < 0.5 * openai_audio
    assert eleven_wall < 0.5 * eleven_audio
