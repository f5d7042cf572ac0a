"""The OpenAI-compatible model lookup, ``GET /v1/models/{model}``
(``voxflow.transports.openai.models``). ``POST /v1/audio/speech`` and ``GET /v1/models`` are wired
in the app factory: the list answers ElevenLabs' clients in their own shape too.

Access control is the app's middleware (``voxflow.server.security``), as for every ``/v1`` path:
with keys configured, the lookup needs one too, and a refusal is OpenAI's error object.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from fastapi import FastAPI
from fastapi.responses import JSONResponse

from voxflow.transports.languages import SpokenLanguage
from voxflow.transports.openai.models import retrieve_model

__all__ = ["mount_openai_models"]


def mount_openai_models(app: FastAPI, languages: Callable[[], Sequence[SpokenLanguage]]) -> None:
    """Add the model lookup to ``app``; ``languages``: those of the server's voices."""

    # ``:path``: a model id may hold a slash (a client joins a namespaced name as it is).
    @app.get("/v1/models/{model:path}")
    async def get_model(model: str) -> JSONResponse:
        answer = retrieve_model(model, languages())
        return JSONResponse(answer.body, status_code=answer.status)
