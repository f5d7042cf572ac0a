"""ElevenLabs' model list, ``GET /v1/models`` as its clients read it (no I/O).

ElevenLabs answers a JSON array of ``Model`` objects, each with the ``languages`` it speaks
(``[{"language_id": "ja", "name": "Japanese"}, ...]``); its SDK's ``models.list()`` parses that,
and clients choose a model (and check a ``language_code``) from it. OpenAI's clients ask the same
path for ``{"object": "list", "data": [...]}`` (``transports.openai.models``): the app answers
ElevenLabs' shape to a request that comes from an ElevenLabs client (``from_elevenlabs``), and
OpenAI's to any other.

voxflow reads every ``model_id`` alike (the voice chooses the sound), so the list names the ids
ElevenLabs clients send, each speaking the languages of the server's voices: a language is
listed once some installed voice speaks it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from voxflow.transports.languages import SpokenLanguage

__all__ = ["MODELS", "from_elevenlabs", "model_list"]

# The ids ElevenLabs clients send (their SDK's default first), with ElevenLabs' names for them.
MODELS: tuple[tuple[str, str], ...] = (
    ("eleven_multilingual_v2", "Eleven Multilingual v2"),
    ("eleven_flash_v2_5", "Eleven Flash v2.5"),
    ("eleven_turbo_v2_5", "Eleven Turbo v2.5"),
)
# ElevenLabs' SDKs (Fern-generated) name themselves in this header: "elevenlabs" for Python,
# "@elevenlabs/elevenlabs-js" for JavaScript.
SDK_HEADER = "x-fern-sdk-name"


def from_elevenlabs(headers: Mapping[str, str]) -> bool:
    """Whether a request comes from an ElevenLabs client: its API key header (``xi-api-key``,
    which no OpenAI client sends) or ElevenLabs' SDK naming itself. ``headers`` is
    case-insensitive (Starlette's)."""
    return "xi-api-key" in headers or "elevenlabs" in headers.get(SDK_HEADER, "").lower()


def model_list(languages: Sequence[SpokenLanguage], max_chars: int) -> list[dict[str, Any]]:
    """``GET /v1/models`` in ElevenLabs' shape: each model with ``languages``;
    ``max_chars`` is the longest text one request may hold."""
    listed = [language.listed() for language in languages]
    return [
        {
            "model_id": model_id,
            "name": name,
            "can_be_finetuned": False,
            "can_do_text_to_speech": True,
            "can_do_voice_conversion": False,
            "can_use_style": False,
            "can_use_speaker_boost": False,
            "serves_pro_voices": False,
            "token_cost_factor": 1.0,
            "description": f"voxflow answers {model_id} with its own voices: the voice chooses "
            "the sound and the language",
            "requires_alpha_access": False,
            "max_characters_request_free_user": max_chars,
            "max_characters_request_subscribed_user": max_chars,
            "maximum_text_length_per_request": max_chars,
            "languages": listed,
        }
        for model_id, name in MODELS
    ]
