"""Wyoming's ``text_format: "ssml"`` end to end: the wyoming package's own events over real TCP,
whole and streamed in chunks that split the tags, against the real voice."""

from __future__ import annotations

import re

from wyoming.event import Event

from tests.support.wyoming_client import audio_of, connect, read_until, seconds, serve
from tests.support.wyoming_messages import (
    Error,
    Synthesize,
    SynthesizeChunk,
    SynthesizeStart,
    SynthesizeStop,
)
from voxflow.server.services import Services
from voxflow.transports.wyoming.server import WyomingServerHandle

PLAIN = "Turn on the lights. The kitchen is ready."
SSML = '<speak>Turn on the lights.<break time="2s"/> The kitchen is ready.</speak>'


def test_ssml_is_spoken_whole_and_streamed_and_plain_tags_would_be_read(
    services: Services,
) -> None:
    async def body(handle: WyomingServerHandle) -> dict[str, float]:
        lengths: dict[str, float] = {}
        async with connect(handle) as client:
            for name, text, text_format in (
                ("plain", PLAIN, None),
                ("ssml", SSML, "ssml"),
            ):
                await client.write_event(Synthesize(text=text, text_format=text_format).event())
                lengths[name] = seconds(audio_of(await read_until(client, "audio-stop"))[1])
            # Streamed, as Home Assistant streams an LLM's reply: tags split across chunks.
            await client.write_event(SynthesizeStart(text_format="ssml").event())
            for chunk in re.findall(r".{1,7}", SSML):
                await client.write_event(SynthesizeChunk(text=chunk).event())
            await client.write_event(SynthesizeStop().event())
            events = await read_until(client, "synthesize-stopped")
            lengths["streamed"] = seconds(audio_of(events[:-1])[1])
        return lengths

    lengths = serve(services, body)
    # The break: two seconds in place of a sentence's pause, whole or streamed.
    assert 1.5 < lengths["ssml"] - lengths["plain"] < 2.5
    assert abs(lengths["streamed"] - lengths["ssml"]) < 0.3


def test_bad_ssml_is_a_wyoming_error(services: Services) -> None:
    async def body(handle: WyomingServerHandle) -> list[Event]:
        async with connect(handle) as client:
            request = Synthesize(text='<speak>Hi <break time="soon"/></speak>', text_format="ssml")
            await client.write_event(request.event())
            return await read_until(client, "error")

    events = serve(services, body)
    error = Error.from_event(events[-1])
    assert error.code == "invalid_ssml" and "break time 'soon'" in error.text
