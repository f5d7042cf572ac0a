from __future__ import annotations

import statistics

import pytest

from voxflow import Strategy
from voxflow.engines.piper import PiperEngine
from voxflow_bench.engine import format_table, run_engine_bench, summary


def test_bench_runs_every_case_in_both_modes_and_summarises(engine: PiperEngine) -> None:
    progress: list[str] = []
    results = run_engine_bench(
        engine,
        "joe",
        repeats=1,
        inputs={"long": "One sentence here, and a clause. Then another one follows."},
        strategies=(Strategy.SENTENCE, Strategy.ADAPTIVE),
        progress=progress.append,
    )
    assert [(r.strategy, r.streamed) for r in results] == [
        ("sentence", True),
        ("sentence", False),
        ("adaptive", True),
        ("adaptive", False),
    ]
    assert progress == ["long / sentence", "long / adaptive"]
    streamed, whole = results[0], results[1]
    assert streamed.audio_ms == whole.audio_ms  # same segments, same seed: same audio length
    goals = summary(results)
    assert set(goals) == {
        "ttfa_long_default_over_sentence_no_stream",
        "max_rtf_stream_over_no_stream",
        "median_rtf_stream_over_no_stream",
    }
    # Each goal is the ratio of the right pair of cases (results are in the order checked above).
    sentence_streamed, sentence_whole, adaptive_streamed, adaptive_whole = results
    assert goals["ttfa_long_default_over_sentence_no_stream"] == pytest.approx(
        adaptive_streamed.ttfa_ms / sentence_whole.ttfa_ms
    )
    rtf_ratios = [
        sentence_streamed.rtf / sentence_whole.rtf,
        adaptive_streamed.rtf / adaptive_whole.rtf,
    ]
    assert goals["max_rtf_stream_over_no_stream"] == pytest.approx(max(rtf_ratios))
    assert goals["median_rtf_stream_over_no_stream"] == pytest.approx(statistics.median(rtf_ratios))
    table = format_table(results)
    assert table.count("\n") == 1 + len(results)
    assert "| long |" in table
