"""The answer to ``POST /v1/audio/speech``, without I/O (``http`` parses the request and runs
it): the encoded audio as it is rendered, or with ``stream_format=sse`` the same audio in
``speech.audio.delta`` events and a closing ``speech.audio.done``. A refusal is OpenAI's error
object (``errors.openai_error``)."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any

from voxflow.session.events import AudioOut, DoneOut
from voxflow.transports.json_body import dump
from voxflow.transports.openai.errors import openai_error
from voxflow.transports.request_protocol import ErrorAnswer, RequestProtocol

__all__ = ["SpeechAudio", "SpeechEvents"]


class SpeechAudio(RequestProtocol):
    """The audio bytes, in the requested format."""

    def error(self, code: str, message: str) -> ErrorAnswer:
        answer = openai_error(code, message)
        return ErrorAnswer.json(answer.status, answer.body)


class SpeechEvents(SpeechAudio):
    """Server-sent events: ``speech.audio.delta`` per piece of audio, then ``speech.audio.done``
    with a usage estimate (OpenAI bills tokens; voxflow has characters and samples)."""

    def __init__(self, text: str) -> None:
        super().__init__("text/event-stream")
        self._text = text
        self._audio_ms = 0.0

    def audio(self, event: AudioOut) -> Sequence[bytes]:
        self._audio_ms += event.duration_ms
        audio = base64.b64encode(event.data).decode("ascii")
        return (_event({"type": "speech.audio.delta", "audio": audio}),)

    def done(self, event: DoneOut) -> Sequence[bytes]:
        input_tokens = max(1, len(self._text) // 4)
        output_tokens = max(1, round(self._audio_ms / 40))
        usage = {
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "total_tokens": input_tokens + output_tokens,
        }
        return (_event({"type": "speech.audio.done", "usage": usage}),)


def _event(payload: dict[str, Any]) -> bytes:
    return f"data: {dump(payload)}\n\n".encode()
