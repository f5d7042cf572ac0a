"""The query string of ElevenLabs' WebSocket endpoints: the options of every context of one
connection, checked before the connection is accepted (no I/O)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from voxflow.connection.protocol_context import ProtocolContext
from voxflow.session.errors import SessionError
from voxflow.session.options import MAX_SEED, shown
from voxflow.text.normalize.normalizer import NormalizationMode
from voxflow.transports.elevenlabs import http as elevenlabs_http

__all__ = ["DEFAULT_INACTIVITY_S", "MAX_INACTIVITY_S", "ConnectionOptions", "parse_connection"]

DEFAULT_INACTIVITY_S = 20
MAX_INACTIVITY_S = 180
# A decimal integer in ASCII: ``int()`` would also take "1_0", " 7 " and other scripts' digits.
_INTEGER = re.compile(r"-?[0-9]{1,20}")


@dataclass(frozen=True)
class ConnectionOptions:
    """What the query string sets for every context of the connection."""

    voice: str
    output_format: str
    auto_mode: bool | None
    seed: int | None
    inactivity_timeout_s: float
    normalization: NormalizationMode
    # ``sync_alignment=true``: alignment times count from the start of the context's audio.
    sync_alignment: bool = False
    ssml: bool = False  # ``enable_ssml_parsing=true``: every context's text is SSML
    language: str | None = None  # ``language_code``, which the voice speaks


def _flag(query: Mapping[str, str], name: str) -> bool | None:
    raw = query.get(name)
    if raw is None:
        return None
    if raw.lower() in ("true", "1"):
        return True
    if raw.lower() in ("false", "0"):
        return False
    raise SessionError("invalid_request", f"{name} must be true or false, got {shown(raw)}")


def _integer(query: Mapping[str, str], name: str) -> int | None:
    raw = query.get(name)
    if raw is None:
        return None
    if _INTEGER.fullmatch(raw) is None:
        raise SessionError("invalid_request", f"{name} must be an integer, got {shown(raw)}")
    return int(raw)


def parse_connection(
    context: ProtocolContext, voice_id: str, query: Mapping[str, str]
) -> ConnectionOptions:
    """Validate the query string. ``language_code`` must be a language the voice speaks: a
    mismatch refuses the connection before any text is read, so nothing of it is spoken.
    ``model_id``, ``enable_logging`` and ``authorization`` are accepted and ignored."""
    fmt = elevenlabs_http.check_output_format(query.get("output_format"))
    voice = elevenlabs_http.resolve_voice_id(context, voice_id)
    language = elevenlabs_http.check_language_code(context, voice, query.get("language_code"))
    timeout = _integer(query, "inactivity_timeout")
    if timeout is None:
        timeout = DEFAULT_INACTIVITY_S
    if not 1 <= timeout <= MAX_INACTIVITY_S:
        raise SessionError(
            "invalid_request", f"inactivity_timeout must be between 1 and {MAX_INACTIVITY_S}"
        )
    seed = _integer(query, "seed")
    if seed is not None and not 0 <= seed <= MAX_SEED:
        # The query string's, so the connection is refused before any context starts.
        raise SessionError("invalid_request", f"seed must be between 0 and {MAX_SEED}")
    return ConnectionOptions(
        voice,
        fmt.name,
        _flag(query, "auto_mode"),
        seed,
        float(timeout),
        elevenlabs_http.normalization_mode(query.get("apply_text_normalization")),
        _flag(query, "sync_alignment") is True,
        _flag(query, "enable_ssml_parsing") is True,
        language,
    )
