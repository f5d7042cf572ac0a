"""Voices of two languages for the protocols' ``language`` tests, without the Japanese voices
installed: the real registry's voices plus a Japanese and an American Kokoro voice as
``VoiceInfo`` values (a session only looks voices up; no model is loaded, nothing is rendered)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from tests.support.protocols import session_config, voice_registry
from voxflow.connection.protocol_context import ProtocolContext
from voxflow.engines.base import VoiceInfo, VoiceNotFoundError
from voxflow.session.session import Session

__all__ = [
    "ALPHA",
    "HEART",
    "fake_voice",
    "language_context",
    "language_session",
    "lookup",
    "voices",
]


def fake_voice(name: str, language: str, engine: str) -> VoiceInfo:
    """A voice as the registry describes one, with no model behind it."""
    return VoiceInfo(
        name=name,
        language=language,
        sample_rate=24000,
        source="test",
        model_path=Path(f"{name}.onnx"),
        config_path=Path(f"{name}.json"),
        engine=engine,
    )


ALPHA = fake_voice("kokoro:jf_alpha", "ja_JP", "kokoro")
HEART = fake_voice("kokoro:af_heart", "en_US", "kokoro")


def voices() -> Sequence[VoiceInfo]:
    """The real registry's voices (the default one first, ``joe``: en_US), then ALPHA, HEART."""
    return (*voice_registry().list(), ALPHA, HEART)


def lookup(name: str) -> VoiceInfo:
    for voice in (ALPHA, HEART):
        if voice.name == name:
            return voice
    try:
        return voice_registry().get(name)
    except VoiceNotFoundError:
        raise VoiceNotFoundError(name, [v.name for v in voices()]) from None


def language_context() -> ProtocolContext:
    """A protocol context of these voices, with the default settings."""
    return ProtocolContext.of(session_config(), lookup, voices)


def language_session() -> Session:
    """A session of these voices, as a connection of a server with the default settings has."""
    return Session(session_config(), lookup)
