"""What an agent sends, for the product's tests: replies of the benchmarks' corpora and the tokens
an LLM streams them in.

The corpora are data files of the benchmarks (``benchmarks/src/voxflow_bench/corpus``,
``name<TAB>category<TAB>text`` a line), read here as files: the tests import no benchmark code.
"""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["LONG", "SHORT", "SLOW_TEXT", "corpus_texts", "stream_tokens"]

CORPUS_DIR = Path(__file__).parents[2] / "benchmarks" / "src" / "voxflow_bench" / "corpus"

SHORT = "Sure, I can help you with that now."
LONG = (
    "The quick brown fox jumps over the lazy dog while the orchestra, tuning its instruments "
    "in the distance, prepares for a long evening of music that nobody in town will forget."
)
# Minutes of speech in twenty different sentences (the phrase cache would keep one said twice):
# a stream that a client which stops reading cannot reach the end of.
SLOW_TEXT = " ".join(
    f"Part {n} of the story: the quick brown fox jumps over the lazy dog while the orchestra, "
    "tuning its instruments in the distance, prepares for a long evening of music that nobody "
    "will forget."
    for n in range(1, 21)
)

# A word with the space before it, cut into pieces of at most four characters (" resc", "hedu",
# "le"), or a run of whitespace: sub-word tokens as an LLM streams them.
_TOKEN = re.compile(r" ?\S{1,4}|\s+")


def corpus_texts(name: str = "replies.tsv") -> list[str]:
    """The replies' texts of the corpus file ``name``, in file order."""
    lines = (CORPUS_DIR / name).read_text(encoding="utf-8").splitlines()
    rows = [line.split("\t") for line in lines if line.strip() and not line.startswith("#")]
    return [row[2].strip() for row in rows]


def stream_tokens(text: str) -> list[str]:
    """``text`` as LLM-style tokens: ``"".join(stream_tokens(text)) == text``."""
    return _TOKEN.findall(text)
