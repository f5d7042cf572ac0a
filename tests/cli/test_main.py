"""``voxflow`` on the command line (``voxflow.cli.main``): ``say``, ``voices``, ``chunks``,
``normalize``, ``--version`` and ``python -m voxflow``."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import wave
from importlib import metadata
from pathlib import Path

import numpy as np
import pytest

from voxflow.cli.main import main


def _read_wav(path: Path) -> tuple[int, np.ndarray]:
    with wave.open(str(path)) as wav:
        frames = wav.readframes(wav.getnframes())
        return wav.getframerate(), np.frombuffer(frames, dtype="<i2")


def test_say_writes_a_wav_and_prints_stats(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "hello.wav"
    assert main(["say", "Hello there, world.", "-o", str(out), "--seed", "1", "--stats"]) == 0
    rate, samples = _read_wav(out)
    assert rate == 22050
    assert 0.5 < len(samples) / rate < 3.0
    assert np.abs(samples).max() > 1000  # not silence
    stats = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert set(stats) >= {"ttfa_ms", "synth_ms", "audio_ms", "rtf"}
    assert 0 < stats["ttfa_ms"] <= stats["synth_ms"]
    assert stats["audio_ms"] == pytest.approx(1000 * len(samples) / rate, abs=0.1)
    assert stats["rtf"] == pytest.approx(stats["synth_ms"] / stats["audio_ms"], rel=1e-2)


def test_no_stream_gives_the_same_audio_as_streaming_the_same_sentences(tmp_path: Path) -> None:
    # Sentence chunking cuts no lead, so both modes render the same segments: windows or not,
    # the audio is the same. (The default chunking cuts a lead inside a long first sentence, as
    # the server does, which --no-stream never does.)
    text = "The orchestra, tuning its instruments in the distance, prepares for a long evening."
    streamed, whole, default = (tmp_path / f"{name}.wav" for name in ("s", "w", "d"))
    sentences = ["--seed", "4", "--chunking", "sentence"]
    assert main(["say", text, "-o", str(streamed), *sentences]) == 0
    assert main(["say", text, "-o", str(whole), *sentences, "--no-stream"]) == 0
    assert main(["say", text, "-o", str(default), "--seed", "4"]) == 0
    _, a = _read_wav(streamed)
    _, b = _read_wav(whole)
    _, c = _read_wav(default)
    assert a.shape == b.shape
    diff = np.linalg.norm(a.astype(float) - b) / np.linalg.norm(b.astype(float))
    assert diff < 1e-2
    assert c.shape != b.shape  # a lead and its takeover: the same words, cut and joined
    assert len(c) == pytest.approx(len(b), rel=0.1)


def test_say_reads_stdin_and_reports_bad_input(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("From standard input."))
    out = tmp_path / "stdin.wav"
    assert main(["say", "-", "-o", str(out)]) == 0
    assert out.stat().st_size > 10_000
    assert main(["say", "hi", "-o", str(out), "--voice", "nobody"]) == 2
    assert "unknown voice 'nobody'" in capsys.readouterr().err
    assert main(["say", "   ", "-o", str(out)]) == 2
    assert "empty" in capsys.readouterr().err
    assert main(["say", "hi", "-o", str(out), "--speed", "9"]) == 2


def test_voices_lists_the_bundled_voice(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["voices"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["NAME", "LANGUAGE", "RATE", "SOURCE"]
    assert lines[1].split() == ["joe", "en_US", "22050", "bundled"]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ["--chunking", "sentence"],
            ["Dr. Smith arrived at 3:30 p.m. today.", "He paid $3.50, then left.", "Bye."],
        ),
        (
            # The first sentence is long for a first segment: "Dr. Smith arrived" costs 17
            # spoken characters, short of the lead window (18 to 32), and "3:30" takes the next
            # word past it, so the lead ends at the last word boundary inside the window.
            ["--auto"],
            ["Dr. Smith arrived at", "3:30 p.m. today.", "He paid $3.50, then left.", "Bye."],
        ),
        (
            ["--chunking", "word", "--schedule", "4"],
            ["Dr. Smith arrived at", "3:30 p.m. today. He", "paid $3.50, then left.", "Bye."],
        ),
    ],
)
def test_chunks_prints_one_segment_per_line(
    args: list[str],
    expected: list[str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    text = "Dr. Smith arrived at 3:30 p.m. today. He paid $3.50, then left. Bye."
    monkeypatch.setattr("sys.stdin", io.StringIO(text))
    assert main(["chunks", *args]) == 0
    assert capsys.readouterr().out.splitlines() == expected


def test_normalize_and_chunks_read_japanese_with_language_ja(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    text = (
        "明日の14:30に、3,000円をお支払いください。資料は事前にお送りしましたので、ご確認ください。"
    )
    monkeypatch.setattr("sys.stdin", io.StringIO(text))
    assert main(["normalize", "--language", "ja"]) == 0
    assert capsys.readouterr().out.startswith("明日の十四時三十分に、三千円をお支払いください。")
    monkeypatch.setattr("sys.stdin", io.StringIO(text))
    assert main(["chunks", "--language", "ja", "--chunking", "sentence"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "明日の14:30に、3,000円をお支払いください。",
        "資料は事前にお送りしましたので、ご確認ください。",
    ]


def test_normalize_prints_the_spoken_form_line_by_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    lexicon = tmp_path / "lexicon.tsv"
    lexicon.write_text("# our product\nvoxflow\tvox flow\n")
    monkeypatch.setattr("sys.stdin", io.StringIO("It costs $3.50.\nTry voxflow at 9:00.\n"))
    assert main(["normalize", "--lexicon", str(lexicon)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "It costs three dollars and fifty cents.",
        "Try vox flow at nine o'clock.",
    ]
    lexicon.write_text("broken line without a tab\n")
    assert main(["normalize", "--lexicon", str(lexicon)]) == 2
    assert "lexicon.tsv:1" in capsys.readouterr().err


def test_version_prints_the_installed_distributions_version(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.strip() == f"voxflow {metadata.version('voxflow')}"


def test_python_dash_m_voxflow_runs_the_same_command_line() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "voxflow", "--version"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"voxflow {metadata.version('voxflow')}"
