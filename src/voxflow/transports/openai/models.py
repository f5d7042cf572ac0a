"""OpenAI's model list, ``GET /v1/models`` and ``GET /v1/models/{model}`` (no I/O).

OpenAI-compatible clients call the list to fill a model picker (the OpenAI SDK's
``models.list()``, Open WebUI, LibreChat) and some check a configured name with a retrieve before
they speak. ``POST /v1/audio/speech`` reads every model name the same way (one engine, the voice
chooses the sound), so the list names what clients send: ``voxflow`` and OpenAI's speech models.
An unknown name on retrieve is OpenAI's 404 ``model_not_found``. Each model also lists the
``languages`` of the server's voices, in ElevenLabs' form (``{"language_id": "ja", "name":
"Japanese"}``): OpenAI's objects have no such field, and its clients ignore fields they do not
know. ElevenLabs' clients get their own shape of this list (``transports.elevenlabs.models``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from voxflow.transports.languages import SpokenLanguage
from voxflow.transports.openai.errors import OpenAIError, error_type

__all__ = ["CREATED", "MODELS", "model_list", "retrieve_model"]

# ``voxflow`` first: a picker that takes the first entry gets the server's own name.
MODELS = ("voxflow", "tts-1", "tts-1-hd", "gpt-4o-mini-tts")

# OpenAI's ``created`` is a Unix time. A fixed one (2026-01-01T00:00:00Z) keeps the answer the
# same across calls and replicas; a client only shows or sorts by it.
CREATED = 1767225600

NOT_FOUND = 404


def _model(name: str, languages: Sequence[SpokenLanguage]) -> dict[str, Any]:
    return {
        "id": name,
        "object": "model",
        "created": CREATED,
        "owned_by": "voxflow",
        "languages": [language.listed() for language in languages],
    }


def model_list(languages: Sequence[SpokenLanguage] = ()) -> dict[str, Any]:
    """``GET /v1/models``: the names clients send to the speech endpoint, each speaking
    ``languages`` (the server's voices')."""
    return {"object": "list", "data": [_model(name, languages) for name in MODELS]}


def retrieve_model(name: str, languages: Sequence[SpokenLanguage] = ()) -> OpenAIError:
    """``GET /v1/models/{name}``: the model object, or OpenAI's 404 for a name not listed."""
    if name in MODELS:
        return OpenAIError(200, _model(name, languages))
    message = f"The model '{name}' does not exist. Models: {', '.join(MODELS)}."
    error = {
        "message": message,
        "type": error_type(NOT_FOUND),
        "param": "model",
        "code": "model_not_found",
    }
    return OpenAIError(NOT_FOUND, {"error": error})
