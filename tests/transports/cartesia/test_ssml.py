"""Cartesia's inline tags against a real server: the official ``cartesia`` SDK pushing a
transcript in pieces that split the tags, and ``/tts/bytes``. Word timestamps are the
transcript's words with the tags left out."""

from __future__ import annotations

import re

import httpx
import numpy as np

from tests.support.cartesia_sdk import S16_24K, VOICE, sdk_connection

TRANSCRIPT = (
    'Hello, my name is Sonic.<break time="1s"/>My code is <spell>AB-12</spell>. '
    '<speed ratio="0.7"/>I speak slowly now, <volume ratio="1.5"/>and AT&T louder.'
)
WRITTEN = "Hello, my name is Sonic.My code is AB-12. I speak slowly now, and AT&T louder."


def test_tags_pushed_in_pieces_are_spoken_and_timed_on_the_written_words(
    server_url: str,
) -> None:
    with sdk_connection(server_url) as connection:
        ctx = connection.context(
            model_id="sonic-3",
            voice=VOICE,
            output_format=S16_24K,
            add_timestamps=True,
            timeout=60,
        )
        for piece in re.findall(r".{1,9}", TRANSCRIPT):
            ctx.push(piece)
        ctx.no_more_inputs()
        events = list(ctx.receive())
    assert events[-1].type == "done"
    audio = b"".join(e.audio or b"" for e in events if e.type == "chunk")
    assert "error" not in {e.type for e in events}
    stamps = [e.word_timestamps for e in events if e.type == "timestamps"]
    words = [w for s in stamps for w in s.words]
    starts = [t for s in stamps for t in s.start]
    ends = [t for s in stamps for t in s.end]
    # (The normalizer reads "AT&T" in three parts, as it does in plain text.)
    expected = WRITTEN.replace(".My", ". My").replace("AT&T", "AT & T")
    assert " ".join(words) == " ".join(expected.split())
    # The break: a second of silence between the speech of "Sonic." and of "My", the longest
    # silence in the audio, and the timestamps put it between those two words.
    silence_start, silence_end = _longest_silence(audio, S16_24K["sample_rate"])
    assert 0.97 < silence_end - silence_start < 1.1
    at = words.index("Sonic.")
    assert starts[at] < silence_start and ends[at] < silence_end
    assert silence_start < starts[at + 1] and silence_end < ends[at + 1]
    # The spelled code ("eigh B one two") is one word over all its sound: longer than "name".
    code, name = words.index("AB-12."), words.index("name")
    assert ends[code] - starts[code] > 2.5 * (ends[name] - starts[name])


def _longest_silence(pcm: bytes, rate: int) -> tuple[float, float]:
    """The longest run of 5 ms frames below -60 dBFS in 16-bit PCM, as (start, end) seconds."""
    frame = rate // 200
    samples = np.frombuffer(pcm, dtype="<i2")[: len(pcm) // 2 // frame * frame]
    power = np.mean((samples.astype(np.float64) / 32768.0).reshape(-1, frame) ** 2, axis=1)
    silent = np.append(power < 1e-6, False)
    best, start = (0, 0), None
    for index, quiet in enumerate(silent):
        if quiet and start is None:
            start = index
        elif not quiet and start is not None:
            best = max(best, (start, index), key=lambda run: run[1] - run[0])
            start = None
    return best[0] * frame / rate, best[1] * frame / rate


def test_tts_bytes_reads_the_tags(server_url: str) -> None:
    def seconds(transcript: str) -> float:
        body = {
            "model_id": "sonic-3",
            "transcript": transcript,
            "voice": VOICE,
            "output_format": {**S16_24K, "container": "raw"},
        }
        with httpx.Client(timeout=60) as http:
            response = http.post(
                server_url + "/tts/bytes", json=body, headers={"Cartesia-Version": "2025-04-16"}
            )
        assert response.status_code == 200, response.text
        return len(response.content) / 2 / 24000

    plain = seconds("Good morning. See you soon.")
    paused = seconds('Good morning.<break time="2s"/>See you soon.')
    assert 1.5 < paused - plain < 2.5
