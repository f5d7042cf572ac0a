"""The OpenAI-compatible model list: ``GET /v1/models`` and ``GET /v1/models/{model}``
(``voxflow.transports.openai.models``). ``POST /v1/audio/speech`` is wired in the app factory.

Access control is the app's middleware (``voxflow.server.security``), as for every ``/v1`` path:
with keys configured, the list needs one too, and a refusal is OpenAI's error object.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.responses import JSONResponse

from voxflow.transports.openai.models import model_list, retrieve_model

__all__ = ["mount_openai_models"]


def mount_openai_models(app: FastAPI) -> None:
    """Add the model list to ``app`` (it needs no services: the list is fixed)."""

    @app.get("/v1/models")
    async def list_models() -> dict[str, Any]:
        return model_list()

    # ``:path``: a model id may hold a slash (a client joins a namespaced name as it is).
    @app.get("/v1/models/{model:path}")
    async def get_model(model: str) -> JSONResponse:
        answer = retrieve_model(model)
        return JSONResponse(answer.body, status_code=answer.status)
