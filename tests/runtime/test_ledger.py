"""Tests for voxflow.runtime.ledger: the jobs' CPU time by what each job was for, as the policy
counts it when results come back."""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.blank_utterance import RATE, SPF, blank_utterance
from voxflow.engines.base import VoiceSettings
from voxflow.runtime.costs import CostModel
from voxflow.runtime.jobs import SegmentRequest
from voxflow.runtime.ledger import WorkLedger
from voxflow.runtime.policy import SchedulingPolicy
from voxflow.runtime.scheduler_settings import SchedulerSettings


def test_a_window_counts_its_context_share_and_its_audio() -> None:
    ledger = WorkLedger()
    ledger.window(0.3, lead=False, frames=20, context_frames=10, audio_s=0.25)
    ledger.window(0.1, lead=True, frames=10, context_frames=10, audio_s=0.1)
    assert ledger.window_s == pytest.approx(0.3)
    assert ledger.lead_window_s == pytest.approx(0.1)
    assert ledger.context_s == pytest.approx(0.3 / 3 + 0.1 / 2)
    assert ledger.rendered_audio_s == pytest.approx(0.35)
    assert ledger.jobs_s == pytest.approx(0.4)


def test_a_snapshot_does_not_move_with_the_ledger() -> None:
    ledger = WorkLedger()
    ledger.text_stage(0.2, lead=True)
    copy = ledger.snapshot()
    ledger.text_stage(0.5, lead=False)
    assert copy.lead_text_stage_s == pytest.approx(0.2)
    assert copy.text_stage_s == 0.0
    assert ledger.jobs_s == pytest.approx(0.7)


@pytest.mark.parametrize("lead", [False, True])
def test_the_policy_counts_each_job_by_kind_at_its_threads_cpu(lead: bool) -> None:
    policy = SchedulingPolicy(SchedulerSettings(wide_threads=1))
    stream = policy.open_stream(lambda _event: None, CostModel(context_frames=20))
    policy.submit(stream, SegmentRequest("Hello", "joe", VoiceSettings(), 0, lead=lead), 0.0)
    picked = policy.next_job(0.0, busy=1)
    assert picked is not None
    policy.prepared(stream, picked[1], blank_utterance(200), 0.05, 0.0, cpu_s=0.04)
    picked = policy.next_job(0.0, busy=1)
    assert picked is not None and picked[1].window is not None
    start, stop = picked[1].window
    audio = np.zeros((stop - start) * SPF, dtype=np.float32)
    policy.rendered(stream, picked[1], audio, 0.02, 0.0, cpu_s=0.015)
    ledger = policy.ledger
    text, window = (
        (ledger.lead_text_stage_s, ledger.lead_window_s)
        if lead
        else (ledger.text_stage_s, ledger.window_s)
    )
    assert text == pytest.approx(0.04)
    assert window == pytest.approx(0.015)
    assert ledger.jobs_s == pytest.approx(0.055)  # the other kind stays at 0
    assert ledger.rendered_audio_s == pytest.approx((stop - start) * SPF / RATE)
    assert ledger.context_s == pytest.approx(0.015 * 20 / (stop - start + 20))


def test_a_cached_result_costs_nothing_in_the_ledger() -> None:
    policy = SchedulingPolicy(SchedulerSettings(wide_threads=1))
    stream = policy.open_stream(lambda _event: None, CostModel())
    policy.submit(stream, SegmentRequest("Hello", "joe", VoiceSettings(), 0), 0.0)
    picked = policy.next_job(0.0, busy=1)
    assert picked is not None
    policy.prepared(stream, picked[1], blank_utterance(50), 0.0, 0.0, learn=False, cached=True)
    assert policy.ledger.jobs_s == 0.0


def test_a_job_on_several_cores_counts_its_own_threads_cpu() -> None:
    # The rest, ONNX Runtime's pool threads', is the process's "other" part.
    policy = SchedulingPolicy(SchedulerSettings(wide_threads=2))
    stream = policy.open_stream(lambda _event: None, CostModel())
    policy.submit(stream, SegmentRequest("Hello", "joe", VoiceSettings(), 0), 0.0)
    picked = policy.next_job(0.0, busy=0)  # alone on the machine: it may use both cores
    assert picked is not None and picked[1].threads == 2
    policy.prepared(stream, picked[1], blank_utterance(50), 0.05, 0.0, cpu_s=0.03)
    assert policy.ledger.text_stage_s == pytest.approx(0.03)
