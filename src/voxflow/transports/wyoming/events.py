"""Wyoming events in and out, without I/O: the checked fields of a client's request, and the
events of voxflow's answers (audio, errors, stream ends).

Audio is s16le mono at the voice's own sample rate (every ``pcm_*`` format), so nothing is
resampled and every audio event names the rate of the voice that spoke it.
"""

from __future__ import annotations

import warnings
from typing import Any

from voxflow.session.errors import SessionError
from voxflow.session.options import clean_text

with warnings.catch_warnings():
    # wyoming.audio imports the stdlib ``audioop``, which warns about its removal on 3.11-3.12
    # (wyoming ships its own copy for 3.13+); we never call it, and the warning would otherwise
    # surface wherever warnings are errors.
    warnings.filterwarnings("ignore", "'audioop' is deprecated", DeprecationWarning)
    from wyoming.audio import AudioChunk, AudioStart, AudioStop
    from wyoming.error import Error
    from wyoming.event import Event
    from wyoming.ping import Pong
    from wyoming.tts import SynthesizeStopped, SynthesizeVoice

__all__ = [
    "CHANNELS",
    "SAMPLE_WIDTH",
    "audio_chunk",
    "audio_start",
    "audio_stop",
    "error_event",
    "pong",
    "request_text",
    "requested_voice",
    "synthesize_stopped",
]

SAMPLE_WIDTH = 2  # bytes: every pcm_* format is s16le
CHANNELS = 1


# -- client -> server ------------------------------------------------------------------------------


def request_text(data: dict[str, Any], event_type: str) -> str:
    """The ``text`` of a ``synthesize`` or ``synthesize-chunk``, cleaned of control characters
    (``voxflow.session.options.clean_text``)."""
    text = data.get("text")
    if not isinstance(text, str):
        raise SessionError("invalid_event", f"{event_type} needs a string 'text'")
    return clean_text(text)


def requested_voice(data: dict[str, Any], event_type: str) -> SynthesizeVoice | None:
    """The ``voice`` a request names, if any (resolved by ``info.resolve_voice``)."""
    raw = data.get("voice")
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise SessionError("invalid_event", f"{event_type} 'voice' must be an object")
    voice = SynthesizeVoice.from_dict(raw)
    if voice is not None and voice.name is not None:
        # ``from_dict`` drops a language given beside a name (the wyoming package reads a name
        # as overriding it); a client that sends both gets them checked against each other.
        voice.language = raw.get("language")
    if voice is not None and not all(
        isinstance(v, str | None) for v in (voice.name, voice.language, voice.speaker)
    ):
        raise SessionError("invalid_event", f"{event_type} voice fields must be strings")
    return voice


# -- server -> client ------------------------------------------------------------------------------


def error_event(code: str, message: str) -> Event:
    """The Wyoming shape of every error, the session's and the protocol's alike:
    ``{"type": "error", "data": {"text": message, "code": code}}``, the code as the session
    names it (``unknown_voice``, ``invalid_event``...)."""
    return Error(text=message, code=code).event()


def pong(data: dict[str, Any]) -> Event:
    """The answer to a ``ping``, echoing its text."""
    text = data.get("text")
    return Pong(text=text if isinstance(text, str) else None).event()


def audio_start(rate: int) -> Event:
    return AudioStart(rate=rate, width=SAMPLE_WIDTH, channels=CHANNELS).event()


def audio_chunk(rate: int, audio: bytes, offset_ms: float) -> Event:
    chunk = AudioChunk(
        rate=rate, width=SAMPLE_WIDTH, channels=CHANNELS, audio=audio, timestamp=round(offset_ms)
    )
    return chunk.event()


def audio_stop() -> Event:
    return AudioStop().event()


def synthesize_stopped() -> Event:
    return SynthesizeStopped().event()
