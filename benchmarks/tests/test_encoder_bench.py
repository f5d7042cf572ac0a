from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from voxflow_bench.encoders import (
    TTFA_BUDGET_MS,
    EncoderBenchResult,
    format_table,
    latency_violations,
    run_encoder_bench,
    speech_like_signal,
)

FORMATS = ("pcm_24000", "wav_22050", "mp3_44100_128", "opus_48000_32", "aac_24000_64")


@pytest.fixture(scope="module")
def results() -> list[EncoderBenchResult]:
    progress: list[str] = []
    out = run_encoder_bench(FORMATS, seconds=1.0, repeats=2, progress=progress.append)
    assert progress == list(FORMATS)
    return out


def test_one_result_per_format_in_order(results: list[EncoderBenchResult]) -> None:
    assert [r.format for r in results] == list(FORMATS)
    assert all(r.runs == 2 for r in results)


def test_costs_and_sizes_are_measured(results: list[EncoderBenchResult]) -> None:
    by_name = {r.format: r for r in results}
    for r in results:
        assert r.cpu_ms_per_audio_s >= 0
        assert r.first_audio_ms > 0
        assert r.first_window_bytes > 0
        assert r.setup_ms > 0
    # Headerless PCM is exactly its sample rate times 16 bits; CBR MP3 lands on its bitrate.
    assert by_name["pcm_24000"].kbps == pytest.approx(384.0, rel=0.01)
    assert by_name["mp3_44100_128"].kbps == pytest.approx(128.0, rel=0.1)
    assert by_name["wav_22050"].first_window_bytes == 44 + 2 * 16 * 256
    # A compressed codec costs more than copying samples at the voice rate.
    assert by_name["mp3_44100_128"].cpu_ms_per_audio_s > by_name["wav_22050"].cpu_ms_per_audio_s


def test_priming_and_pause_padding(results: list[EncoderBenchResult]) -> None:
    by_name = {r.format: r for r in results}
    assert by_name["mp3_44100_128"].priming_ms == pytest.approx(1000 * 1105 / 44100)
    assert by_name["aac_24000_64"].priming_ms == pytest.approx(1000 * 1024 / 24000)
    assert by_name["opus_48000_32"].priming_ms == 0  # pre-skip: decoders drop it
    assert by_name["pcm_24000"].pause_padding_ms == 0
    assert by_name["wav_22050"].held_ms == 0
    for name in ("mp3_44100_128", "opus_48000_32", "aac_24000_64"):
        assert 0 < by_name[name].pause_padding_ms < 200
        assert 0 < by_name[name].held_ms < 16 * 256 / 22.05  # less than the whole window


def test_every_format_has_audio_from_the_first_window(results: list[EncoderBenchResult]) -> None:
    assert all(r.windows_to_first_audio == 1 for r in results)
    assert all(math.isfinite(r.extra_ttfa_ms) for r in results)


def fake(name: str, first_ms: float, windows: int) -> EncoderBenchResult:
    return EncoderBenchResult(
        format=name,
        cpu_ms_per_audio_s=1.0,
        first_audio_ms=first_ms,
        windows_to_first_audio=windows,
        first_window_bytes=100,
        held_ms=0.0,
        priming_ms=0.0,
        pause_padding_ms=0.0,
        kbps=64.0,
        setup_ms=0.1,
        runs=1,
    )


def test_latency_budget_checks() -> None:
    fast, slow, late = fake("a", 1.0, 1), fake("b", 25.0, 1), fake("c", 1.0, 2)
    assert fast.within_budget()
    assert not slow.within_budget()
    assert slow.within_budget(budget_ms=30.0)
    assert late.extra_ttfa_ms == math.inf
    problems = latency_violations([fast, slow, late])
    assert len(problems) == 2
    assert problems[0].startswith("b: first audio after 25.00 ms")
    assert problems[1].startswith("c: no audio until window 2")
    assert latency_violations([fast], budget_ms=0.5) == ["a: first audio after 1.00 ms > 0.5"]


def test_table_has_a_row_per_format_and_a_verdict(results: list[EncoderBenchResult]) -> None:
    # The verdicts come from known figures: measured ones depend on how busy the machine is
    # (timing goals are the benchmark's, docs/benchmarks.md, never a unit test's).
    fast = fake("fast_format", TTFA_BUDGET_MS / 2, 1)
    slow = fake("slow_format", 2 * TTFA_BUDGET_MS, 1)
    table = format_table([*results, fast, slow])
    lines = table.splitlines()
    assert len(lines) == 2 + len(results) + 2
    assert lines[0].count("|") == lines[1].count("|") == lines[2].count("|")
    assert f"<= {TTFA_BUDGET_MS:g} ms" in lines[0]
    measured = lines[2:-2]
    assert [line.split("|")[1].strip() for line in measured] == [r.format for r in results]
    assert all(line.endswith(("| ok |", "| **over** |")) for line in measured)
    assert lines[-2].startswith("| fast_format |") and lines[-2].endswith("| ok |")
    assert lines[-1].startswith("| slow_format |")
    assert lines[-1].endswith("| **over** |")


def test_result_as_dict_is_json_ready(results: list[EncoderBenchResult]) -> None:
    row = results[0].as_dict()
    assert set(row) == {f.name for f in dataclasses.fields(EncoderBenchResult)}
    assert row["format"] == "pcm_24000"


def test_bench_takes_real_audio_and_rejects_nonsense() -> None:
    audio = np.zeros(22050 // 2, dtype=np.float32)
    (result,) = run_encoder_bench(["flac_22050"], repeats=1, audio=audio)
    assert result.format == "flac_22050"
    with pytest.raises(ValueError, match="repeats"):
        run_encoder_bench(["pcm_8000"], repeats=0)
    with pytest.raises(ValueError, match="some audio"):
        run_encoder_bench(["pcm_8000"], audio=np.zeros(0, dtype=np.float32))


def test_speech_like_signal_is_deterministic_and_in_range() -> None:
    first = speech_like_signal(0.5)
    assert len(first) == 11025
    assert first.dtype == np.float32
    assert np.array_equal(first, speech_like_signal(0.5))
    assert 0.05 < float(np.max(np.abs(first))) <= 1.0
