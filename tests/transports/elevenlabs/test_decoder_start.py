"""A client that decodes a compressed stream with FFmpeg, as LiveKit Agents does (``av.open`` on
the bytes as they arrive), reads 1.5 to 2.5 s of MP3 or AAC before it plays anything. The server
sends that much at the start of a stream, so such a client starts after the first few messages
rather than after a sentence's worth of them."""

from __future__ import annotations

import base64
import json
import threading
from typing import Any

import av
import pytest
from websockets.sync.client import connect

TEXT = (
    "I can definitely help you reschedule your appointment to next Tuesday afternoon if that "
    "works better for you. Would you like the morning or the afternoon slot instead?"
)


class _ArrivingBytes:
    """A blocking, file-like view of bytes that arrive in messages; notes how many messages had
    arrived when the reader asked for more than there was."""

    def __init__(self) -> None:
        self._data = bytearray()
        self._position = 0
        self._messages = 0
        self._ended = False
        self._cond = threading.Condition()
        self.messages_read = 0

    def feed(self, chunk: bytes) -> None:
        with self._cond:
            self._data += chunk
            self._messages += 1
            self._cond.notify_all()

    def end(self) -> None:
        with self._cond:
            self._ended = True
            self._cond.notify_all()

    def read(self, size: int = -1) -> bytes:
        with self._cond:
            while self._position >= len(self._data) and not self._ended:
                self._cond.wait(30)
            available = len(self._data) - self._position
            n = available if size < 0 else min(size, available)
            chunk = bytes(self._data[self._position : self._position + n])
            self._position += n
            self.messages_read = self._messages
            return chunk


def _messages_before_first_frame(server_url: str, output_format: str) -> tuple[int, int]:
    """(messages with audio needed before the decoder's first frame, messages with audio)."""
    base = server_url.replace("http://", "ws://")
    url = f"{base}/v1/text-to-speech/joe/stream-input?output_format={output_format}"
    stream = _ArrivingBytes()
    needed: list[int] = []

    def decode() -> None:
        with av.open(stream) as container:  # type: ignore[call-overload]
            audio = next(s for s in container.streams if s.type == "audio")
            for _ in container.decode(audio):
                needed.append(stream.messages_read)
                return

    decoder = threading.Thread(target=decode, daemon=True)
    decoder.start()
    total = 0
    with connect(url, max_size=None) as ws:
        ws.send(json.dumps({"text": " "}))
        ws.send(json.dumps({"text": TEXT + " ", "flush": True}))
        ws.send(json.dumps({"text": ""}))
        for raw in ws:
            reply: dict[str, Any] = json.loads(raw)
            if reply.get("audio"):
                stream.feed(base64.b64decode(reply["audio"]))
                total += 1
            if reply.get("isFinal"):
                break
    stream.end()
    decoder.join(30)
    assert needed, "the decoder never produced a frame"
    return needed[0], total


@pytest.mark.parametrize("output_format", ["mp3_22050_32", "mp3_44100_128", "aac_24000_64"])
def test_an_ffmpeg_client_starts_after_the_first_few_messages(
    server_url: str, output_format: str
) -> None:
    needed, total = _messages_before_first_frame(server_url, output_format)
    # The first window (quick first bytes), then the rest of what the decoder reads.
    assert needed <= 3 < total, (needed, total)
