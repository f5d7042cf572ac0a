"""LiveKit Agents' Deepgram plugin (WebSocket, `/v1/speak`) against voxflow.

What it sends (livekit-plugins-deepgram 1.8.9): a pooled connection per TTS (reused for up to
an hour), `ws://HOST/v1/speak?encoding=linear16&model=aura-2-andromeda-en&sample_rate=24000&
mip_opt_out=false` with `Authorization: Token KEY`; per segment (the text up to a `flush()`)
one `{"type":"Speak","text":"WORD "}` per word of its basic word tokenizer (punctuation kept
on the word), then `{"type":"Flush"}`, and it reads audio until `Flushed`. It never sends
`Clear`: closing a stream (before or after end_input) cancels its tasks and the pool drops
the socket without a word; when the pool next runs (the next stream's `connection()`) or
closes, it sends the dropped socket `Flush` and `Close`, waits up to 1 s for one message and
closes it. The plugin gives no word timings (`aligned_transcript` is False).
"""

from __future__ import annotations

import aiohttp
import livekit_harness as lk
import pytest
from livekit.plugins import deepgram
from voxflow_checks import LONG_SENTENCE_REPLIES

FRAMEWORK = "livekit deepgram"


@pytest.fixture
async def tts(voxflow):  # type: ignore[no-untyped-def]
    async with aiohttp.ClientSession() as session:
        engine = deepgram.TTS(
            api_key="unused", base_url=f"{voxflow.http_url}/v1/speak", http_session=session
        )
        try:
            yield engine
        finally:
            await engine.aclose()


async def test_reply_then_next_turn(voxflow, tts, logs) -> None:  # type: ignore[no-untyped-def]
    await lk.scenario_reply_then_next_turn(tts, voxflow.http_url, logs, FRAMEWORK, aligned=False)


@pytest.mark.parametrize("when", ["mid-reply", "after-flush"])
async def test_barge_in(voxflow, tts, logs, when: str) -> None:  # type: ignore[no-untyped-def]
    # Closing a stream sends nothing (no `Clear`); when the next stream starts, the pool sends
    # the dropped socket `Flush` and `Close` and closes it.
    await lk.scenario_barge_in(
        tts,
        voxflow.http_url,
        logs,
        FRAMEWORK,
        when,
        aligned=False,
        silent=frozenset({"mid-reply", "after-flush"}),
        socket_closed_by_next_stream=True,
    )


async def test_idle_pause_between_turns(voxflow, tts, logs) -> None:  # type: ignore[no-untyped-def]
    await lk.scenario_idle_pause(tts, voxflow.http_url, logs, FRAMEWORK, aligned=False)


@pytest.mark.parametrize("reply", list(LONG_SENTENCE_REPLIES))
async def test_long_reply(voxflow, tts, logs, reply: str) -> None:  # type: ignore[no-untyped-def]
    await lk.scenario_long_reply(tts, voxflow.http_url, logs, FRAMEWORK, reply, aligned=False)
