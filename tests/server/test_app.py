from __future__ import annotations

import contextlib
import json
import urllib.request
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from tests.support.servers import free_port, serving
from voxflow import LocalSpeaker, SessionConfig, StartOptions, create_app
from voxflow.config import ServerSettings
from voxflow.engines.router import EngineRouter
from voxflow.server.services import Services


def _get(url: str) -> tuple[int, str]:
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.status, response.read().decode()


def test_health_and_readiness(server_url: str) -> None:
    assert _get(server_url + "/healthz") == (200, '{"status":"ok"}')
    status, body = _get(server_url + "/readyz")
    ready = json.loads(body)
    assert status == 200 and (ready["status"], ready["default_voice"]) == ("ready", "joe")
    assert ready["active_streams"] == 0 and ready["stream_limit"] >= 1


def test_voices_serve_both_our_fields_and_elevenlabs(server_url: str) -> None:
    _, body = _get(server_url + "/v1/voices")
    (voice,) = json.loads(body)["voices"]
    native = {
        "name": "joe",
        "language": "en_US",
        "sample_rate": 22050,
        "source": "bundled",
        "speakers": [],
        "default": True,
    }
    assert {k: voice[k] for k in native} == native
    assert voice["voice_id"] == "joe" and voice["category"] == "premade"
    assert voice["labels"]["language"] == "en"


def test_voices_and_models_show_the_voices_languages(server_url: str) -> None:
    _, body = _get(server_url + "/v1/voices")
    (voice,) = json.loads(body)["voices"]
    assert [(v["language"], v["locale"]) for v in voice["verified_languages"]] == [("en", "en-US")]
    english = [{"language_id": "en", "name": "English"}]
    # One path, two shapes: OpenAI's object by default, ElevenLabs' array to its clients.
    _, body = _get(server_url + "/v1/models")
    openai = json.loads(body)
    assert openai["object"] == "list"
    assert all(model["languages"] == english for model in openai["data"])
    request = urllib.request.Request(server_url + "/v1/models", headers={"xi-api-key": "any"})
    with urllib.request.urlopen(request, timeout=10) as response:
        elevenlabs = json.loads(response.read())
    assert isinstance(elevenlabs, list) and elevenlabs
    assert all(model["languages"] == english and model["model_id"] for model in elevenlabs)


def test_metrics_expose_the_documented_series(server_url: str) -> None:
    request = urllib.request.Request(
        server_url + "/v1/audio/speech",
        data=json.dumps({"input": "Counted.", "response_format": "pcm"}).encode(),
        headers={"content-type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        assert response.read()
    status, body = _get(server_url + "/metrics")
    assert status == 200
    # Labelled by protocol (TTFA) and by protocol, format and voice (streams).
    assert 'voxflow_ttfa_seconds_count{protocol="openai"}' in body
    assert 'voxflow_streams_total{format="pcm_24000",protocol="openai",voice="joe"}' in body
    assert "\nvoxflow_workers 2.0\n" in body  # the shared server's --workers 2
    for name in (
        "voxflow_ttfa_seconds_bucket",
        "voxflow_admitted_streams",
        "voxflow_stream_limit",
        "voxflow_load",
        "voxflow_capacity",
        "voxflow_admission_pressure_bucket",
        "voxflow_admission_misses_total",
        "voxflow_admission_overdue",
        "python_gc_objects_collected_total",
        "voxflow_chunk_gap_seconds_bucket",
        "voxflow_quiet_seconds_bucket",
        "voxflow_quiet_gaps_total",
        "voxflow_cancel_latency_seconds_bucket",
        "voxflow_active_contexts",
        "voxflow_queue_depth",
        "voxflow_busy_workers",
        "voxflow_jobs_total",
        "voxflow_deadline_misses_total",
    ):
        assert f"\n{name}" in body, name


def test_an_app_given_an_engine_serves_with_it_and_leaves_it_to_its_owner(
    served_engine: EngineRouter,
) -> None:
    settings = ServerSettings(port=free_port(), workers=1)
    with serving(settings, served_engine) as server:
        services = server.config.app.state.services
        assert isinstance(services, Services)
        assert services.engine is served_engine
        assert services.registry is served_engine.registry
        request = {"input": "Served.", "response_format": "pcm"}
        url = f"http://127.0.0.1:{settings.port}/v1/audio/speech"
        with httpx.Client(timeout=60) as http:
            response = http.post(url, json=request)
        assert response.status_code == 200 and len(response.content) > 4800
    # The server's stop stopped its own workers, not the engine: its owner still speaks with it.
    with LocalSpeaker(served_engine, SessionConfig("joe")) as speaker:
        assert len(speaker.say("Still here.", StartOptions()).audio) > 4800


@pytest.mark.parametrize(
    "fields",
    [
        {"voices_dir": Path("voices")},
        {"kokoro": True},
        {"kokoro_voices_dir": Path("kokoro")},
        {"voice_aliases": ("alloy=joe",)},
        {"split_cache": "off"},
    ],
)
def test_settings_that_name_voices_are_refused_beside_an_engine(
    served_engine: EngineRouter, fields: dict[str, object]
) -> None:
    (name,) = fields
    settings = ServerSettings(**fields)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=f"leave {name} unset"):
        create_app(settings, served_engine)
    with pytest.raises(ValueError, match=f"leave {name} unset"):
        Services.build(settings, engine=served_engine)


def test_readiness_shows_the_capacity_learnt_up_to_the_cores(
    server_factory: Callable[..., contextlib.AbstractContextManager[str]],
) -> None:
    with server_factory(workers=2, max_load=1.0) as url:  # the default: only the cores bound it
        status, body = _get(url + "/readyz")
    ready = json.loads(body)
    assert status == 200 and ready["capacity_ceiling"] == 2.0
    assert ready["capacity"] == 1.0  # it starts at half the ceiling, and learns from there
