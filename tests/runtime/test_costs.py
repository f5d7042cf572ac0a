"""Tests for voxflow.runtime.costs: the CPU a second of a stream's audio takes, as jobs teach it."""

from __future__ import annotations

import pytest

from voxflow.runtime.costs import (
    _AUDIO_MEMORY_S,
    _PRIOR_AUDIO_S,
    KOKORO_AUDIO_COST_S,
    KOKORO_FIRST_FRAMES,
    KOKORO_FRAMES_PER_S,
    PIPER_AUDIO_COST_S,
    CostModel,
    ProcessOverhead,
    initial_costs,
)


def test_the_cost_starts_at_the_engines_prior() -> None:
    assert CostModel(audio_cost_s=0.25).audio_cost_s == 0.25
    assert initial_costs("piper").audio_cost_s == PIPER_AUDIO_COST_S
    assert initial_costs("kokoro").audio_cost_s == KOKORO_AUDIO_COST_S


def test_a_kokoro_start_is_priced_at_its_own_jobs_not_piper_s_factor() -> None:
    kokoro, piper = initial_costs("kokoro"), initial_costs("piper")
    assert kokoro.start_cost_s is not None and piper.start_cost_s is not None
    # A first sentence's text stage and a second of windows (the first one short), each with
    # its context, at Kokoro's rates: no takeover renders its lead again.
    frames = KOKORO_FRAMES_PER_S
    windows = kokoro.render_s(KOKORO_FIRST_FRAMES) + kokoro.render_s(frames - KOKORO_FIRST_FRAMES)
    assert windows < kokoro.start_cost_s < windows + kokoro.prepare_s(300)
    # ... about what a second of its audio costs, where Piper's start counts 2.5 of its seconds:
    # a second Kokoro call beside one that speaks fits in two cores.
    assert kokoro.start_cost_s / kokoro.audio_cost_s < piper.start_cost_s / piper.audio_cost_s
    assert kokoro.audio_cost_s + kokoro.start_cost_s <= 2.0
    # ... and it is learnt like any start.
    before = kokoro.start_cost_s
    kokoro.observe_start(0.5)
    assert 0.5 < kokoro.start_cost_s < before


def test_the_cost_moves_towards_what_jobs_take_and_no_further() -> None:
    model = CostModel(audio_cost_s=0.1)
    seen = [model.audio_cost_s]
    for _ in range(20):
        model.observe_work(0.5, 1.0)  # 0.5 CPU s a second of audio
        seen.append(model.audio_cost_s)
    assert seen == sorted(seen) and len(set(seen)) == len(seen)  # strictly up
    assert seen[-1] < 0.5
    for _ in range(20):
        model.observe_work(0.0, 1.0)  # free audio (say, cut from the phrase cache)
    assert model.audio_cost_s < seen[-1]


def test_a_text_stage_costs_cpu_without_audio() -> None:
    model = CostModel(audio_cost_s=0.1)
    model.observe_work(0.3)
    assert model.audio_cost_s > 0.1


def test_the_prior_weighs_as_some_audio_not_as_one_job() -> None:
    model = CostModel(audio_cost_s=0.1)
    model.observe_work(10.0, 1.0)  # one pathological window
    assert model.audio_cost_s < 1.0


def test_forgetting_half_keeps_the_estimate_where_it_was() -> None:
    model = CostModel(audio_cost_s=0.1)
    # Work and audio since the start, up to the step that crosses the memory's limit, where half
    # of both is forgotten: the estimate must not jump there.
    work, audio = 0.1 * _PRIOR_AUDIO_S, _PRIOR_AUDIO_S  # the prior counts as that much audio
    step = 0
    while audio <= _AUDIO_MEMORY_S:
        cpu = 0.2 if step % 2 else 0.4
        model.observe_work(cpu, 1.0)
        work, audio, step = work + cpu, audio + 1.0, step + 1
        assert model.audio_cost_s == pytest.approx(work / audio)


def test_a_new_level_is_learnt_within_minutes_even_after_a_long_history() -> None:
    model = CostModel(audio_cost_s=0.1)
    for _ in range(1800):  # half an hour of audio at 0.1
        model.observe_work(0.1, 1.0)
    assert model.audio_cost_s == pytest.approx(0.1)
    # The machine gets busier: each second of audio now takes 0.5 CPU s. An average over all
    # the audio so far would still say about 0.15 after the next few minutes.
    for _ in range(int(_AUDIO_MEMORY_S)):
        model.observe_work(0.5, 1.0)
    assert model.audio_cost_s > 0.38
    for _ in range(int(_AUDIO_MEMORY_S)):
        model.observe_work(0.5, 1.0)
    assert model.audio_cost_s == pytest.approx(0.5, rel=0.06)


def test_the_process_overhead_is_its_cpu_time_over_the_jobs_once_enough_work_was_seen() -> None:
    overhead = ProcessOverhead(min_work_s=1.0, max_span_s=30.0)
    overhead.observe(0.0, 10.0, 0.0)  # the span starts
    overhead.observe(0.5, 10.8, 1.0)  # not enough jobs yet: nothing learnt
    assert overhead.ratio == 1.0
    overhead.observe(1.0, 11.5, 2.0)  # 1.5 s of the process for 1 s of jobs
    assert overhead.ratio == pytest.approx(1.0 + 0.2 * 0.5)
    for step in range(1, 60):
        overhead.observe(1.0 + step, 11.5 + 1.5 * step, 2.0 + step)
    assert overhead.ratio == pytest.approx(1.5, abs=1e-3)


def test_an_idle_span_is_dropped_and_the_ratio_stays_within_its_bounds() -> None:
    overhead = ProcessOverhead(min_work_s=1.0, max_span_s=30.0)
    overhead.observe(0.0, 0.0, 0.0)
    # A minute idle: the event loop's ticks are not a cost of audio.
    overhead.observe(0.2, 5.0, 60.0)
    overhead.observe(1.2, 6.0, 61.0)  # measured from the idle span's end: 1 s for 1 s
    assert overhead.ratio == 1.0
    for step in range(1, 60):  # cache hits: encoding with no job
        overhead.observe(1.2 + step, 6.0 + 9 * step, 61.0 + step)
    assert overhead.ratio == pytest.approx(2.0, abs=1e-3)
    for step in range(60, 120):  # a process that spent less than its jobs (a clock's noise)
        overhead.observe(1.2 + step, 6.0 + 9 * 59 + 0.5 * (step - 59), 61.0 + step)
    assert overhead.ratio == pytest.approx(1.0, abs=1e-3)


def test_cpu_the_audio_cost_does_not_learn_from_still_counts_as_jobs() -> None:
    model = CostModel(audio_cost_s=0.1)
    model.observe_work(0.5, 10.0)
    model.observe_elsewhere(0.3)
    assert model.observed_cpu_s == pytest.approx(0.8)
    # Learnt from the 0.5 s job only, on top of its prior (0.1 over _PRIOR_AUDIO_S).
    prior = 0.1 * _PRIOR_AUDIO_S
    assert model.audio_cost_s == pytest.approx((prior + 0.5) / (_PRIOR_AUDIO_S + 10.0))
