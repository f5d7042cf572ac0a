"""Tests for voxflow.server.metrics: what the server's own instruments count."""

from __future__ import annotations

import math

from voxflow.runtime.slack import PRESSURE_BOUNDS, SlackMeter
from voxflow.server.metrics import ServerMetrics
from voxflow.session.load_limit import Decision


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


def test_the_slack_admission_learns_from_is_a_histogram_of_pressure() -> None:
    meter = SlackMeter()
    meter.taken(ready=0.0, deadline=1.0, now=0.0)  # served at once
    meter.taken(ready=0.0, deadline=1.0, now=0.5)
    meter.taken(ready=0.0, deadline=1.0, now=2.0)  # late
    meter.missed()
    metrics = ServerMetrics()
    decided = Decision(at=1.0, pressure=math.inf, jobs=3.0, capacity=0.8)
    metrics.watch_admission(lambda: meter.snapshot(overdue=2), lambda: decided)
    assert _value(metrics, 'voxflow_admission_pressure_bucket{le="0.5"}') == 2.0
    assert _value(metrics, 'voxflow_admission_pressure_bucket{le="+Inf"}') == 3.0
    assert _value(metrics, "voxflow_admission_pressure_sum") == 2.5
    assert _value(metrics, "voxflow_admission_misses_total") == 1.0
    assert _value(metrics, "voxflow_admission_overdue") == 2.0
    assert _value(metrics, "voxflow_admission_pressure_judged") == PRESSURE_BOUNDS[-1]
