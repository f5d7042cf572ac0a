from __future__ import annotations

import json
import urllib.request


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
        "python_gc_objects_collected_total",
        "voxflow_chunk_gap_seconds_bucket",
        "voxflow_cancel_latency_seconds_bucket",
        "voxflow_active_contexts",
        "voxflow_queue_depth",
        "voxflow_busy_workers",
        "voxflow_jobs_total",
        "voxflow_deadline_misses_total",
    ):
        assert f"\n{name}" in body, name
