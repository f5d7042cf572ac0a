"""``voxflow bench-prosody``: cuts, the two renderings, the measures and the report."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import numpy as np
import pytest

from voxflow import Engine, SchedulerSettings, SpokenWords, VoiceSettings, WordTiming
from voxflow.cli.main import main
from voxflow_bench.corpus import Reply
from voxflow_bench.prosody.render import (
    Rendering,
    group_pieces,
    reference_speaker,
    render,
    split_pieces,
)
from voxflow_bench.prosody.report import format_report, report_dict
from voxflow_bench.prosody.results import CutKind, Mode, NoiseMode, ProsodyOptions, ProsodyReport
from voxflow_bench.prosody.run import Analysed, compare_boundary, find_cuts, run_prosody_bench
from voxflow_bench.prosody.summary import summarise

# Two short replies, long enough for the segmenter to cut them into pieces.
TEXTS = (
    "I checked your account this morning, and everything looks fine.",
    "Okay, I turned off the kitchen lights and set the thermostat.",
)


def word(text: str, token: str, start_ms: float, after: int = 0) -> WordTiming:
    char_start = text.index(token, after)
    return WordTiming(token, start_ms, start_ms + 100.0, char_start, char_start + len(token))


def rendering(text: str, pieces: list[list[str]]) -> Rendering:
    """A fake streamed rendering: silent audio, words at 100 ms each, grouped as given."""
    grouped = []
    position = 0
    clock = 0.0
    for piece in pieces:
        words = []
        for token in piece:
            timing = word(text, token, clock, position)
            position = timing.char_end
            clock += 100.0
            words.append(timing)
        grouped.append(tuple(words))
    return Rendering(22050, np.zeros(22050, dtype=np.float32), tuple(grouped))


# -- cuts and pieces (no engine) ---------------------------------------------------------------


def test_cuts_are_classified_from_the_written_text() -> None:
    text = "Well, Dr. Smith paid $3.50 for it today. How are you doing?"
    fake = rendering(
        text,
        [["Well"], ["Dr", "Smith", "paid"], ["3.50", "for"], ["it", "today"], ["How", "are"]],
    )
    cuts = find_cuts(fake, text)
    assert [(c.before.word, c.after.word, c.kind) for c in cuts] == [
        ("Well", "Dr", CutKind.CLAUSE),
        ("paid", "3.50", CutKind.PHRASE),
        ("for", "it", CutKind.PHRASE),
        ("today", "How", CutKind.SENTENCE),
    ]
    assert cuts[0].label == "Well | Dr"


def test_a_period_inside_a_sentence_is_no_sentence_end() -> None:
    text = "Please call Dr. Smith tomorrow."
    cuts = find_cuts(rendering(text, [["Please", "call", "Dr"], ["Smith", "tomorrow"]]), text)
    assert [c.kind for c in cuts] == [CutKind.PHRASE]


def test_one_piece_has_no_cut() -> None:
    text = "Sure, I can help."
    assert find_cuts(rendering(text, [["Sure", "I", "can", "help"]]), text) == []


def test_events_of_one_piece_are_joined() -> None:
    text = "one two three four five"
    words = [word(text, w, 100.0 * i) for i, w in enumerate(text.split())]
    # A lead sends its words window by window (piece 0); its takeover is another piece (1);
    # untagged timings are pieces of their own.
    timings = [
        SpokenWords((words[0],), 0),
        SpokenWords((words[1],), 0),
        SpokenWords((), 0),
        SpokenWords((words[2],), 1),
        SpokenWords((words[3],), None),
        SpokenWords((words[4],), None),
    ]
    pieces = group_pieces(timings)
    assert [[w.word for w in p] for p in pieces] == [
        ["one", "two"],
        ["three"],
        ["four"],
        ["five"],
    ]


def test_split_pieces_adds_up_to_the_text() -> None:
    text = "I can definitely help, okay?  Sure. "
    pieces = split_pieces(text)
    assert "".join(pieces) == text
    assert all(len(piece.strip()) <= 4 for piece in pieces)
    assert pieces[:4] == ["I", " can", " defi", "nite"]
    assert split_pieces("   ") == ["   "]


def test_options_are_validated() -> None:
    with pytest.raises(ValueError, match="token_rate"):
        ProsodyOptions(token_rate=0.0)
    with pytest.raises(ValueError, match="floor_seed_offset"):
        ProsodyOptions(floor_seed_offset=0)
    assert ProsodyOptions().voice_settings() == VoiceSettings(noise_scale=0.0, noise_w=0.0, seed=1)
    assert ProsodyOptions(noise=NoiseMode.SEEDED).voice_settings() == VoiceSettings(seed=1)


# -- the real thing ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def report(engine: Engine) -> ProsodyReport:
    replies = [Reply(f"text{i}", "test", text) for i, text in enumerate(TEXTS)]
    # A fast token rate keeps the test short (the pieces are still sent one by one); seeded
    # noise makes the reference one side of the noise floor, saving a rendering per reply.
    options = ProsodyOptions(noise=NoiseMode.SEEDED, tokens=True, token_rate=400.0)
    return run_prosody_bench(engine, "joe", replies, options, scheduler=SchedulerSettings(1))


def test_every_reply_is_measured_in_both_modes(report: ProsodyReport) -> None:
    assert [(r.name, r.mode) for r in report.replies] == [
        ("text0", Mode.WHOLE),
        ("text0", Mode.TOKENS),
        ("text1", Mode.WHOLE),
        ("text1", Mode.TOKENS),
    ]
    assert report.voice == "joe"


def test_cuts_lie_where_the_streamed_pieces_split(report: ProsodyReport) -> None:
    for result in report.replies:
        assert result.pieces >= 1
        assert result.events >= result.pieces
        assert len(result.cuts) == result.pieces - 1
        for cut in result.cuts:
            assert cut.cut.before.char_end <= cut.cut.after.char_start
            assert cut.cut.before.end_ms <= cut.cut.after.end_ms
    # Where the segmenter cuts is its own business (and changing); that it cuts these texts
    # somewhere, and the bench finds it, is what this test needs.
    assert any(result.cuts for result in report.replies)


def test_measures_are_finite(report: ProsodyReport) -> None:
    for result in report.replies:
        ratio = result.duration_ratio
        assert ratio is not None and 0.5 < ratio < 2.0
        assert result.floor_duration_ratio is not None and result.floor_duration_ratio > 0
        for cut in result.cuts:
            for measure in (cut.measure, cut.floor):
                assert measure is not None, cut.cut.label
                assert math.isfinite(measure.added_pause_ms)
                assert measure.pause_ms >= 0 and measure.reference_pause_ms >= 0
                for value in (
                    measure.f0_distance_st,
                    measure.end_f0_delta_st,
                    measure.energy_distance_db,
                ):
                    assert value is None or math.isfinite(value)
                assert measure.energy_distance_db is not None


def test_the_report_names_every_reply_and_serialises(report: ProsodyReport) -> None:
    text = format_report(report)
    for label in ("inside", "clause", "phrase", "noise floor", "sentence end", "Goals"):
        assert label in text
    assert "== mode whole" in text and "== mode tokens" in text
    assert "text0" in text and "text1" in text
    data = json.loads(json.dumps(report_dict(report)))
    assert set(data["modes"]) == {"whole", "tokens"}
    replies = data["modes"]["whole"]["replies"]
    assert [r["name"] for r in replies] == ["text0", "text1"]
    assert len(replies[0]["cuts"]) == len(report.replies[0].cuts)
    summary = summarise(report, Mode.WHOLE)
    assert summary.duration.replies == 2
    cuts = sum(len(r.cuts) for r in report.replies if r.mode is Mode.WHOLE)
    rows = summary.rows
    assert rows["inside"].cuts + rows["sentence end"].cuts + rows["inside"].unmatched == cuts


def test_a_rendering_against_itself_differs_in_nothing(engine: Engine) -> None:
    text = "Sure, I can do that. See you soon."
    options = ProsodyOptions()
    with reference_speaker(engine, "joe") as speaker:
        reference = render(speaker, text, options.voice_settings())
    assert reference.sample_rate == engine.voice_info("joe").sample_rate
    assert len(reference.pieces) == 2  # one per sentence
    analysed = Analysed.of(reference, options)
    words = reference.words
    for before, after in itertools.pairwise(words):
        measure = compare_boundary(analysed, analysed, before, after, options)
        assert measure is not None
        assert measure.added_pause_ms == 0.0
        assert measure.f0_distance_st in (0.0, None)
        assert measure.energy_distance_db == 0.0
    # The sentence boundary of the reference is a real pause; the words inside flow on.
    last_of_first = reference.pieces[0][-1]
    first_of_second = reference.pieces[1][0]
    pause = compare_boundary(analysed, analysed, last_of_first, first_of_second, options)
    assert pause is not None and pause.pause_ms > 150.0


def test_pieces_must_add_up_to_the_text(engine: Engine) -> None:
    with reference_speaker(engine, "joe") as speaker, pytest.raises(ValueError, match="add up"):
        render(speaker, "Sure, I can.", VoiceSettings(), ["Sure", " I can."])


def test_the_cli_runs_the_bench(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpus = tmp_path / "replies.tsv"
    corpus.write_text("one\ttest\tSure, I can.\ntwo\ttest\tSure.\n", encoding="utf-8")
    out = tmp_path / "prosody.json"
    code = main(["bench-prosody", "--corpus", str(corpus), "--replies", "1", "--json", str(out)])
    assert code == 0
    printed = capsys.readouterr().out
    assert "voxflow prosody bench: 1 replies" in printed
    data = json.loads(out.read_text())
    assert [r["name"] for r in data["modes"]["whole"]["replies"]] == ["one"]
    assert main(["bench-prosody", "--corpus", str(corpus), "--replies", "0"]) == 2
