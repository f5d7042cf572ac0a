"""What a wire protocol's unit test needs of a server, without one: the real voice registry (no
model loaded, no workers), the session's default limits, and the protocol context they give."""

from __future__ import annotations

import functools
from typing import Any

from voxflow.connection.protocol_context import ProtocolContext
from voxflow.engines.registry import VoiceRegistry
from voxflow.session.admission import Admission
from voxflow.session.options import SessionConfig
from voxflow.session.session import Session

__all__ = ["new_session", "protocol_context", "session_config", "voice_registry"]


@functools.cache
def voice_registry() -> VoiceRegistry:
    """The server's voices with the default settings (the bundled one, its aliases)."""
    return VoiceRegistry()


def session_config(**overrides: Any) -> SessionConfig:
    """A server's session configuration with the default settings, but for ``overrides``."""
    return SessionConfig(default_voice=voice_registry().default_voice, **overrides)


def protocol_context(config: SessionConfig | None = None) -> ProtocolContext:
    """The protocol context of sessions made with ``config`` (the defaults)."""
    registry = voice_registry()
    return ProtocolContext.of(config or session_config(), registry.get, registry.list)


def new_session(config: SessionConfig | None = None, admission: Admission | None = None) -> Session:
    """A session as a connection of a server with ``config`` (the defaults) has."""
    return Session(config or session_config(), voice_registry().get, admission)
