"""SSML and speech controls on ``WS /v1/stream`` through voxflow's own client, against a real
server: ``text_format: "ssml"`` streamed in tokens, ``settings`` mid-context, a cancel's heard
text on the written text, and a bad chunk refused while the context goes on."""

from __future__ import annotations

import asyncio
import re

from voxflow.client import (
    AudioEvent,
    CancelledEvent,
    DoneEvent,
    ErrorEvent,
    Event,
    TimestampsEvent,
    VoxflowClient,
    stream_url,
)

DOCUMENT = (
    '<speak>Call <say-as interpret-as="telephone">555-0100</say-as> now.<break time="800ms"/>'
    ' The <sub alias="World Health Organization">WHO</sub> says <prosody rate="fast" '
    'volume="+6dB">hurry up</prosody>, please.</speak>'
)
WRITTEN = "Call 555-0100 now. The WHO says hurry up, please."


async def _context(client: VoxflowClient, cid: str) -> list[Event]:
    events: list[Event] = []
    async for event in client.events(cid):
        events.append(event)
        if isinstance(event, DoneEvent | CancelledEvent):
            break
    return events


def _words(events: list[Event]) -> list[tuple[str, float, float]]:
    return [
        (WRITTEN[w.char_start : w.char_end], w.start_ms, w.end_ms)
        for e in events
        if isinstance(e, TimestampsEvent)
        for w in e.words
    ]


def test_streamed_ssml_is_timed_on_the_written_text(server_url: str) -> None:
    async def main() -> list[Event]:
        async with VoxflowClient.connect(stream_url(server_url)) as client:
            await client.start("a", output_format="pcm_16000", text_format="ssml")
            for token in re.findall(r".{1,4}", DOCUMENT):
                await client.send_text("a", token)
            await client.end("a")
            return await _context(client, "a")

    events = asyncio.run(main())
    assert not [e for e in events if isinstance(e, ErrorEvent)]
    words = _words(events)
    assert [w.strip(".,") for w, _, _ in words] == [w.strip(".,") for w in WRITTEN.split()]
    phone = next(w for w in words if w[0].startswith("555"))
    call = words[0]
    assert phone[2] - phone[1] > 3 * (call[2] - call[1])  # seven digits, one written word
    now, the = words[2], words[3]
    assert 700 < the[1] - now[2] < 1000  # the break
    audio = b"".join(e.audio for e in events if isinstance(e, AudioEvent))
    assert words[-1][2] <= len(audio) / 2 / 16 + 1


def test_settings_change_the_rest_of_a_context_and_bad_markup_loses_nothing(
    server_url: str,
) -> None:
    async def main() -> list[Event]:
        async with VoxflowClient.connect(stream_url(server_url)) as client:
            await client.start("a", output_format="pcm_16000", text_format="ssml", seed=1)
            await client.send_text("a", "<speak>First part here. ")
            await client.send_text("a", "<prosody rate='loud'>")  # a rate is no volume
            await client.settings("a", sentence_pause_ms=1200.0, speed=0.8)
            await client.send_text("a", "Second part. Third part.</speak>")
            await client.end("a")
            return await _context(client, "a")

    events = asyncio.run(main())
    [error] = [e for e in events if isinstance(e, ErrorEvent)]
    assert error.code == "invalid_ssml" and "prosody rate 'loud'" in error.message
    assert isinstance(events[-1], DoneEvent)
    written = "First part here. Second part. Third part."
    words = [
        (written[w.char_start : w.char_end].strip("."), w.start_ms, w.end_ms)
        for e in events
        if isinstance(e, TimestampsEvent)
        for w in e.words
    ]
    assert [w for w, _, _ in words] == [w.strip(".") for w in written.split()]
    # The pause after a sentence, from the settings on: 1.2 s before "Third".
    third = [w for w, _, _ in words].index("Third")
    assert 1100 < words[third][1] - words[third - 1][2] < 1400


def test_a_cancel_reports_the_written_text_heard(server_url: str) -> None:
    async def main() -> CancelledEvent:
        async with VoxflowClient.connect(stream_url(server_url)) as client:
            await client.start("a", output_format="pcm_16000", text_format="ssml")
            await client.send_text("a", DOCUMENT)
            await client.flush("a")
            async for event in client.events("a"):
                if isinstance(event, AudioEvent) and event.offset_ms > 4000:
                    break
            await client.cancel("a", played_ms=3900.0)  # in the break after "now."
            events = await _context(client, "a")
            assert isinstance(events[-1], CancelledEvent)
            return events[-1]

    cancelled = asyncio.run(main())
    assert cancelled.spoken_text.startswith("Call 555-0100")
    assert WRITTEN.startswith(cancelled.spoken_text)
    assert "<" not in cancelled.spoken_text
