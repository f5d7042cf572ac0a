"""Tests for voxflow.server.metrics: what the server's own instruments count."""

from __future__ import annotations

from voxflow.server.metrics import ServerMetrics


def _value(metrics: ServerMetrics, name: str) -> float:
    for line in metrics.render().decode().splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError(f"{name} is not in the metrics")


def test_a_silence_longer_than_the_bound_while_audio_was_owed_is_a_quiet_gap() -> None:
    metrics = ServerMetrics(max_quiet_s=1.5)
    for quiet_s in (0.0, 0.2, 1.5, 1.6, 4.0):
        metrics.observe_quiet(quiet_s)
    assert _value(metrics, "voxflow_quiet_gaps_total") == 2.0
    assert _value(metrics, "voxflow_quiet_seconds_count") == 5.0
    assert _value(metrics, 'voxflow_quiet_seconds_bucket{le="1.5"}') == 3.0
