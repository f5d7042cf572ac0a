"""The pure parts of ``voxflow bench``: corpus, tokens, statistics, options, report, plot."""

from __future__ import annotations

import io
import random
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from voxflow_bench.corpus import Reply, load_corpus
from voxflow_bench.memory import MemoryResult, long_text
from voxflow_bench.options import BenchOptions
from voxflow_bench.plot import Series, scatter_svg
from voxflow_bench.progress import ProgressLine
from voxflow_bench.report import BenchReport, ServerReport, format_report
from voxflow_bench.results import Level, Run, Section, first_sentence_chars
from voxflow_bench.sections import first_segment_token
from voxflow_bench.stats import Distribution, percentile
from voxflow_bench.tokens import llm_tokens, paced

CATEGORIES = {
    "acknowledgement", "customer service", "scheduling", "smart home", "prices",
    "dates and times", "addresses", "phone numbers", "confirmation numbers", "lists",
    "questions", "long first sentence", "long subordinate clause", "travel",
}  # fmt: skip


# -- corpus --------------------------------------------------------------------------------------


def test_the_corpus_looks_like_agent_replies() -> None:
    corpus = load_corpus()
    assert len(corpus) >= 80
    assert len({r.name for r in corpus}) == len(corpus)
    assert {r.category for r in corpus} >= CATEGORIES
    long_first = [
        r
        for r in corpus
        if first_sentence_chars(r.text) > 75 and not any(m in r.text[:60] for m in ",;:—")
    ]
    assert len(long_first) >= 25
    assert any(len(r.text) <= 10 for r in corpus)  # one-word acknowledgements


def test_a_held_out_corpus_is_read_from_a_file(tmp_path: Path) -> None:
    path = tmp_path / "held-out.tsv"
    path.write_text("# comment\n\none\tgreeting\tHello there.\n", encoding="utf-8")
    assert load_corpus(path) == (Reply("one", "greeting", "Hello there."),)
    path.write_text("one\tgreeting\n", encoding="utf-8")
    with pytest.raises(ValueError, match="line 1"):
        load_corpus(path)
    path.write_text("a\tb\tc\na\tb\td\n", encoding="utf-8")
    with pytest.raises(ValueError, match="duplicate"):
        load_corpus(path)
    path.write_text("# nothing\n", encoding="utf-8")
    with pytest.raises(ValueError, match="no replies"):
        load_corpus(path)


def test_first_sentence_length() -> None:
    assert first_sentence_chars("Sure. I can help.") == 5
    assert first_sentence_chars("Dr. Smith is in. Yes.") == 16
    assert first_sentence_chars("no end") == 6


# -- tokens --------------------------------------------------------------------------------------


def test_llm_tokens_add_up_to_the_text_at_about_four_characters() -> None:
    lengths = []
    for reply in load_corpus():
        tokens = llm_tokens(reply.text)
        assert "".join(tokens) == reply.text
        assert all(tokens)
        lengths += [len(t) for t in tokens]
    assert 3.5 <= sum(lengths) / len(lengths) <= 4.5


def test_llm_tokens_carry_leading_spaces_and_split_long_words() -> None:
    tokens = llm_tokens("I can reschedule it, at $1,234.56!\n\nOK?")
    assert tokens[:4] == ["I", " can", " resc", "hedu"]
    assert " $" in tokens and "234" in tokens and "\n" in tokens
    assert "".join(llm_tokens("  spaces   here ")) == "  spaces   here "


def test_paced_tokens_come_in_order_no_sooner_than_their_time() -> None:
    with pytest.raises(ValueError, match="rate"):
        paced(["a"], 0.0)
    arrivals: list[tuple[str, float]] = []
    for token in paced(["a", "b", "c", "d"], rate=100.0):
        arrivals.append((token, time.monotonic()))
    assert [token for token, _ in arrivals] == ["a", "b", "c", "d"]
    # A lower bound holds on a busy machine: token i is due i / rate after the first.
    assert arrivals[-1][1] - arrivals[0][1] >= 0.03 - 1e-3


def test_first_segment_token_is_where_the_segmenter_cuts() -> None:
    tokens = llm_tokens("Sure. I can definitely help you reschedule your appointment.")
    # "Sure." is certain once the next word's first token arrives.
    assert first_segment_token(tokens) == tokens.index(" I")
    assert first_segment_token(["no", " end"]) == 1


# -- statistics and options -------------------------------------------------------------------


def test_percentile_matches_numpy() -> None:
    rng = random.Random(7)
    for size in (1, 2, 5, 40):
        values = [rng.uniform(0, 100) for _ in range(size)]
        for q in (0, 50, 95, 99, 100):
            assert percentile(values, q) == pytest.approx(float(np.percentile(values, q)))
    with pytest.raises(ValueError):
        percentile([], 50)
    with pytest.raises(ValueError):
        percentile([1.0], 101)


def test_distribution_of_nothing_is_empty() -> None:
    empty = Distribution.of([])
    assert empty.count == 0 and empty.p50 is None
    assert Distribution.of([3.0, 1.0, 2.0]).p50 == 2.0
    assert empty.as_dict()["p99"] is None


def test_options_are_validated_and_rotate_replies() -> None:
    for bad in (
        {"repeats": 0},
        {"token_rate": 0},
        {"concurrency": (0,)},
        {"rounds": 0},
        {"replies": ()},
        {"sections": ("nope",)},
        {"playout_buffer_ms": -1},
        {"long_text_chars": 0},
        {"busy_streams": 0},
        {"memory_settle_s": -0.1},
    ):
        with pytest.raises(ValueError):
            BenchOptions(**bad)  # type: ignore[arg-type]
    replies = tuple(Reply(f"r{i}", "x", f"Reply {i}.") for i in range(5))
    options = BenchOptions(replies=replies, concurrency=(1, 4), rounds=2, repeats=2)
    assert options.steps == 5 * 2 + 5 + options.cancel_repeats + 2 * 2 + 1  # + memory
    assert [r.name for r in options.replies_for(3, 1)] == ["r3", "r4", "r0"]


# -- report and plot ----------------------------------------------------------------------------


def _run(name: str, ttfa: float, underruns: int = 0) -> Run:
    return Run(name, 40, True, ttfa, ttfa / 2, ttfa - 3, underruns, 10.0 * underruns, 0, 900.0)


def test_report_sets_voxflow_against_the_peer() -> None:
    replies = (Reply("a", "x", "A."), Reply("b", "x", "B."))
    options = BenchOptions(replies=replies, sections=("full", "concurrency"), concurrency=(2,))
    ours = Section("full text", (_run("a", 40.0), _run("b", 60.0)))
    theirs = Section("full text", (_run("a", 400.0), _run("b", 600.0)))
    level = Level(2, Section("2 at once", (_run("a", 80.0, underruns=1), _run("b", 90.0))))
    report = BenchReport(
        options,
        ServerReport("ws://x", "voxflow", ours, None, (level,)),
        None,
        None,
        ServerReport("tcp://y", "piper", theirs, None, (), streaming=False),
        1.0,
    )
    text = format_report(report)
    assert "peer piper" in text
    assert "0.10" in text  # 50 / 500 at p50
    assert "worst voxflow: b (60 ms" in text
    assert not level.clean


def test_scatter_svg_is_valid_and_draws_every_point() -> None:
    svg = scatter_svg(
        "t & <title>",
        "x",
        "y",
        [Series("a", ((10.0, 40.0), (120.0, 55.0))), Series("b", ((80.0, 480.0),))],
    )
    root = ET.fromstring(svg)
    circles = root.findall("{http://www.w3.org/2000/svg}circle")
    assert len(circles) == 3 + 2  # points plus one legend mark per series
    assert "t &amp; &lt;title&gt;" in svg


def test_progress_line_redraws_in_place() -> None:
    out = io.StringIO()
    line = ProgressLine(out, total=4, width=8)
    line.advance("a long label")
    line.advance("b")
    frames = out.getvalue().split("\r")[1:]
    assert frames[0].startswith("[##------]    1/4 a long label")
    assert frames[1].startswith("[####----]    2/4 b")
    assert len(frames[1]) == len(frames[0])  # padded over the longer label
    line.advance("c", steps=10)
    assert line.done == 4
    line.finish()
    assert out.getvalue().endswith("\n")


def test_long_text_repeats_the_corpus_up_to_a_word() -> None:
    replies = (Reply("a", "x", "One two three."), Reply("b", "x", "Four five."))
    text = long_text(BenchOptions(replies=replies, long_text_chars=40))
    assert text == "One two three. Four five. One two three."  # 40 characters
    assert long_text(BenchOptions(replies=replies, long_text_chars=36)) == (
        "One two three. Four five. One two"  # never half a word
    )
    assert long_text(BenchOptions(replies=replies, long_text_chars=3)) == "One"


def test_memory_result_per_stream_share() -> None:
    m = MemoryResult(300.0, (("x", 310.0),), 4, 340.0, 305.0, 320.0, 312.0, 301.0)
    assert m.per_stream_mib == 10.0
    assert MemoryResult(300.0, (), 4, 290.0, 300.0, 300.0, 300.0, 300.0).per_stream_mib == 0.0
    assert m.as_dict()["after_mib"] == {"x": 310.0}
    assert m.as_dict()["stopped_held_mib"] == 312.0
