"""The ``wyoming`` package's event classes the tests use, imported in one place: wyoming.audio
imports the stdlib ``audioop``, deprecated on 3.11-3.12 (and unused here), and the warning would
be an error wherever a test module happened to import it first."""

from __future__ import annotations

import warnings

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", "'audioop' is deprecated", DeprecationWarning)
    from wyoming.audio import AudioChunk, AudioStart
    from wyoming.error import Error
    from wyoming.event import Event
    from wyoming.info import Describe, Info
    from wyoming.ping import Ping, Pong
    from wyoming.tts import (
        Synthesize,
        SynthesizeChunk,
        SynthesizeStart,
        SynthesizeStop,
        SynthesizeVoice,
    )

__all__ = [
    "AudioChunk",
    "AudioStart",
    "Describe",
    "Error",
    "Event",
    "Info",
    "Ping",
    "Pong",
    "Synthesize",
    "SynthesizeChunk",
    "SynthesizeStart",
    "SynthesizeStop",
    "SynthesizeVoice",
]
