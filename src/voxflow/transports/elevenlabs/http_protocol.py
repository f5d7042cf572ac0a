"""The answers of ElevenLabs' ``/v1/text-to-speech/{voice_id}...`` endpoints, without I/O
(``http`` parses the request and runs it):

* ``TtsAudio``: the audio bytes as they are rendered (``...`` and ``.../stream``);
* ``TtsLines``: one JSON object per line, each with base64 audio and the characters first heard
  in it (``.../stream/with-timestamps``);
* ``TtsWhole``: one JSON object with all the audio and every character's times
  (``.../with-timestamps``), sent at the end.

Alignment uses ElevenLabs' HTTP names and seconds from the start of the request's audio
(``http.http_alignment``). A refusal is ElevenLabs' HTTP error shape (``errors.http_error``).
"""

from __future__ import annotations

import abc
import base64
from collections.abc import Sequence
from typing import Any

from voxflow.session.events import AudioOut, DoneOut, TimestampsOut
from voxflow.transports.elevenlabs.alignment import CharAligner, TimedChar
from voxflow.transports.elevenlabs.errors import http_error
from voxflow.transports.json_body import dump
from voxflow.transports.request_protocol import ErrorAnswer, RequestProtocol

__all__ = ["TtsAudio", "TtsLines", "TtsWhole", "http_alignment"]


def http_alignment(chars: Sequence[TimedChar]) -> dict[str, Any] | None:
    """ElevenLabs' HTTP alignment: times in seconds from the start of the request's audio."""
    if not chars:
        return None
    return {
        "characters": [c.char for c in chars],
        "character_start_times_seconds": [round(c.start_ms / 1000.0, 3) for c in chars],
        "character_end_times_seconds": [
            round((c.start_ms + c.duration_ms) / 1000.0, 3) for c in chars
        ],
    }


class TtsAudio(RequestProtocol):
    """The audio bytes, in the requested format."""

    def error(self, code: str, message: str) -> ErrorAnswer:
        answer = http_error(code, message)
        return ErrorAnswer.json(answer.status, answer.body)


class _Timestamped(TtsAudio):
    """Audio with the characters first heard in each piece of it."""

    def __init__(self, text: str, media_type: str) -> None:
        super().__init__(media_type)
        self._text = text
        self._aligner = CharAligner()

    def timestamps(self, event: TimestampsOut) -> Sequence[bytes]:
        self._aligner.add(event, self._text)
        return ()

    def audio(self, event: AudioOut) -> Sequence[bytes]:
        return self.timed(event.data, self._aligner.take(event).chars)

    def done(self, event: DoneOut) -> Sequence[bytes]:
        # Characters after the last word (trailing punctuation, spaces) have no audio of their own.
        rest = self._aligner.finish(self._text).chars
        return (*(self.timed(b"", rest) if rest else ()), *self.end())

    @abc.abstractmethod
    def timed(self, audio: bytes, chars: Sequence[TimedChar]) -> Sequence[bytes]:
        """The body parts for a piece of audio and the characters first heard in it."""

    def end(self) -> Sequence[bytes]:
        return ()


def _object(audio: bytes, chars: Sequence[TimedChar]) -> dict[str, Any]:
    alignment = http_alignment(chars)
    return {
        "audio_base64": base64.b64encode(audio).decode("ascii"),
        "alignment": alignment,
        # voxflow speaks the text it was given: both alignments are the same.
        "normalized_alignment": alignment,
    }


class TtsLines(_Timestamped):
    def __init__(self, text: str) -> None:
        super().__init__(text, "application/x-ndjson")

    def timed(self, audio: bytes, chars: Sequence[TimedChar]) -> Sequence[bytes]:
        return ((dump(_object(audio, chars)) + "\n").encode(),)


class TtsWhole(_Timestamped):
    def __init__(self, text: str) -> None:
        super().__init__(text, "application/json")
        self._audio = bytearray()
        self._chars: list[TimedChar] = []

    def timed(self, audio: bytes, chars: Sequence[TimedChar]) -> Sequence[bytes]:
        self._audio += audio
        self._chars.extend(chars)
        return ()

    def end(self) -> Sequence[bytes]:
        whole = _object(bytes(self._audio), self._chars)
        return (dump(whole).encode(),)
