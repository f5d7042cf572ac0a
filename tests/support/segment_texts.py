"""Texts for the sentence splitter and the text buffer: the golden sentence splits
(``boundaries_golden.txt``, each line a text with ``|`` where a sentence ends) and a Hypothesis
strategy for texts full of what makes splitting hard (abbreviations, numbers, quotes, dashes)."""

from __future__ import annotations

from pathlib import Path

from hypothesis import strategies as st

__all__ = [
    "GAPS",
    "GOLDEN",
    "GOLDEN_PATH",
    "GOLDEN_TEXTS",
    "TOKENS",
    "load_golden",
    "parse_golden_line",
    "tricky_text",
]

GOLDEN_PATH = Path(__file__).with_name("boundaries_golden.txt")


def parse_golden_line(line: str) -> tuple[str, list[int]]:
    """Return the input text and the expected SENTENCE positions (end of text included)."""
    marked = line.replace("\\n", "\n").replace(" | ", " |")
    chars: list[str] = []
    expected: list[int] = []
    for char in marked:
        if char == "|":
            expected.append(len("".join(chars).rstrip()))
        else:
            chars.append(char)
    text = "".join(chars)
    expected.append(len(text.rstrip()))
    return text, expected


def load_golden() -> list[str]:
    """The golden file's lines, without blank lines and ``#`` comments."""
    lines = GOLDEN_PATH.read_text(encoding="utf-8").splitlines()
    return [line for line in lines if line.strip() and not line.startswith("#")]


GOLDEN = load_golden()
GOLDEN_TEXTS = [parse_golden_line(line)[0] for line in GOLDEN]


TOKENS = [
    "Dr.", "Smith", "etc.", "The", "and", "U.S.", "3.14", "$3.50", "p.m.", "Wait...", "what",
    "Yes!", "no?", '"Stop."', "“Hi.”", "(aside.)", "1.", "42.", "Fig.", "2", "J.", "—", "-",
    "--", "word,", "x;", "note:", "…", "e.g.", "www.example.org", "a.b@c.de", "v1.2.3",
]  # fmt: skip
GAPS = [" ", " ", " ", "  ", "\n", "\n\n", " \n ", "\t"]


@st.composite
def tricky_text(draw: st.DrawFn) -> str:
    """A golden text, or tricky tokens joined by spaces, newlines and tabs."""
    if draw(st.booleans()):
        return draw(st.sampled_from(GOLDEN_TEXTS))
    words = draw(st.lists(st.sampled_from(TOKENS), min_size=0, max_size=25))
    gaps = draw(st.lists(st.sampled_from(GAPS), min_size=len(words) + 1, max_size=len(words) + 1))
    parts = [gaps[0]]
    for word, gap in zip(words, gaps[1:], strict=True):
        parts.extend([word, gap])
    return "".join(parts)
