"""``voxflow bench-cache`` against real servers: its hits are hits, its misses misses, and the
replayed trace finds the phrases said again."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from pathlib import Path

from voxflow_bench.cache_bench import TRACE as BUNDLED_TRACE
from voxflow_bench.cache_bench import CacheBenchOptions, repeated_replies, run_cache_bench
from voxflow_bench.corpus import load_corpus

ServerFactory = Callable[..., contextlib.AbstractContextManager[str]]

TRACE = """# name\tcategory\ttext
a1\ttrace\tOne moment, let me check that for you.
a2\ttrace\tYour order 4521 shipped on Monday.
b1\ttrace\tOne moment, let me check that for you.
b2\ttrace\tThanks for calling, goodbye!
c1\ttrace\tOne moment, let me check that for you.
c2\ttrace\tThanks for calling, goodbye!
"""


def test_the_bundled_trace_repeats_what_agents_repeat() -> None:
    texts = [reply.text for reply in load_corpus(BUNDLED_TRACE)]
    repeated = repeated_replies(texts)
    assert len(texts) >= 60 and len(repeated) >= 3
    assert len(set(texts)) > len(texts) / 2  # most of a reply is said once


def test_hits_misses_and_the_replay(server_factory: ServerFactory, tmp_path: Path) -> None:
    trace = tmp_path / "trace.tsv"
    trace.write_text(TRACE, encoding="utf-8")
    with server_factory(workers=2) as url:
        options = CacheBenchOptions(url, None, trace, repeats=2, sections=("hits",))
        report = asyncio.run(run_cache_bench(options))
    assert report.unreported_hits == 0, report.notes
    assert report.hit_ttfa is not None and report.hit_ttfa.count == 4  # 2 phrases x 2
    assert report.miss_ttfa is not None and report.miss_ttfa.count == 4
    # A hit's first audio comes sooner than a fresh rendering's (ordering, not a figure).
    assert report.hit_ttfa.p50 is not None and report.miss_ttfa.p50 is not None
    assert report.hit_ttfa.p50 < report.miss_ttfa.p50
    with server_factory(workers=2) as url:
        options = CacheBenchOptions(url, None, trace, repeats=1, sections=("replay",))
        replay = asyncio.run(run_cache_bench(options))
    assert replay.replay_turns == 6
    # "One moment..." is kept on its second time and heard from the cache on its third; the
    # goodbye is kept on its second time only.
    assert replay.replay_hits >= 1
    assert "started from the cache" in replay.render()
