"""``GET /v1/models`` and ``GET /v1/models/{model}``: the table, and the official OpenAI SDK against
a real server."""

from __future__ import annotations

import httpx
import openai
import pytest

from voxflow.transports.languages import SpokenLanguage
from voxflow.transports.openai.models import CREATED, MODELS, model_list, retrieve_model

JAPANESE = SpokenLanguage("ja", "Japanese")


def test_the_list_has_openais_shape_and_voxflow_first() -> None:
    answer = model_list((JAPANESE,))
    assert answer["object"] == "list"
    assert [model["id"] for model in answer["data"]] == list(MODELS)
    assert MODELS[0] == "voxflow" and "tts-1" in MODELS
    for model in answer["data"]:
        assert model == {
            "id": model["id"],
            "object": "model",
            "created": CREATED,
            "owned_by": "voxflow",
            # The voices' languages, in ElevenLabs' form: OpenAI's clients ignore the field.
            "languages": [{"language_id": "ja", "name": "Japanese"}],
        }
    assert retrieve_model("tts-1", (JAPANESE,)).body == answer["data"][1]


def test_an_unknown_model_is_openais_404() -> None:
    answer = retrieve_model("whisper-1")
    assert answer.status == 404
    assert answer.body["error"]["code"] == "model_not_found"
    assert answer.body["error"]["param"] == "model"
    assert "whisper-1" in answer.body["error"]["message"]
    assert retrieve_model("tts-1").status == 200


def test_models_list_with_the_official_sdk(client: openai.OpenAI) -> None:
    models = list(client.models.list())
    assert [model.id for model in models] == list(MODELS)
    assert {(model.object, model.owned_by, model.created) for model in models} == {
        ("model", "voxflow", CREATED)
    }
    # The bundled voice's language (the server of the tests has no other voice).
    assert models[0].model_extra == {"languages": [{"language_id": "en", "name": "English"}]}


def test_models_retrieve_with_the_official_sdk(client: openai.OpenAI) -> None:
    model = client.models.retrieve("tts-1-hd")
    assert (model.id, model.object, model.owned_by) == ("tts-1-hd", "model", "voxflow")
    with pytest.raises(openai.NotFoundError) as missing:
        client.models.retrieve("gpt-4o")
    assert missing.value.status_code == 404
    assert missing.value.code == "model_not_found"


@pytest.mark.parametrize("model", MODELS)
def test_every_listed_model_speaks(client: openai.OpenAI, model: str) -> None:
    audio = client.audio.speech.create(
        model=model, voice="alloy", input="Hi.", response_format="pcm"
    ).content
    assert len(audio) > 24000 * 2 * 0.1  # at least 0.1 s of 24 kHz s16le


def test_the_list_is_in_the_openapi_schema(server_url: str) -> None:
    with httpx.Client(base_url=server_url, timeout=30) as http:
        paths = http.get("/openapi.json").json()["paths"]
    assert "get" in paths["/v1/models"]
    assert "get" in paths["/v1/models/{model}"]
