"""Whether a four-digit number is a year ("in 1999" -> "nineteen ninety-nine") or a count.

Decisions for ambiguous input (US English): a bare four-digit number is a year when a year cue
precedes it ("in", "since", "by", ... see ``_YEAR_CUES``) and it lies in 1000..2099, or when it
lies in 1900..2099 and no lower-case word follows it ("1999.", "2026 Olympics", "1999 was");
otherwise it is a cardinal ("1999 people" -> "one thousand nine hundred ninety-nine people").
A number right after a year range's dash is a year too ("1990-1995").
"""

from __future__ import annotations

from voxflow.text.normalize.base import Match, next_word, prev_word

__all__ = ["read_year"]

# Words after which a four-digit number is a year whatever follows ("in 1999 prices rose").
_YEAR_CUES = frozenset(
    {
        "in", "since", "by", "until", "till", "circa", "c", "ca", "year", "during", "before",
        "after", "early", "late", "mid", "spring", "summer", "fall", "autumn", "winter", "class",
        "vintage", "fiscal", "fy", "season",
    }
)  # fmt: skip
# Weaker cues: a year unless a counted noun follows ("from 1999 to 2005" but "to 1999 people").
_WEAK_YEAR_CUES = frozenset(
    {
        "from", "to", "of", "through", "between", "and", "or", "around",
    }
)  # fmt: skip
# Words after which a four-digit number is a year even though a lower-case word follows it.
_YEAR_NEXT = frozenset(
    {
        "was", "is", "has", "this", "its", "as", "plus", "thus", "versus", "us", "his",
    }
)  # fmt: skip
# Plural nouns not ending in "s": "1999 people" is a count, not a year.
_COUNT_NOUNS = frozenset(
    {
        "people", "men", "women", "children", "feet", "teeth", "mice", "geese", "persons",
    }
)  # fmt: skip


def read_year(text: str, start: int, end: int, value: int, prev: Match | None) -> bool:
    """Whether the four-digit ``value`` at ``text[start:end]`` is read as a year."""
    if prev is not None and prev.end == start and prev.kind == "range:year":
        return True
    cue = prev_word(text, start)
    if cue in _YEAR_CUES:
        return 1000 <= value <= 2099
    if not (1000 if cue in _WEAK_YEAR_CUES else 1900) <= value <= 2099:
        return False
    after = next_word(text, end)
    if not text[end : end + 1].isspace() or not after[:1].islower() or after in _YEAR_NEXT:
        # "1999.", "1999, when", "2026 Olympics", "1999 was": nothing is being counted.
        return True
    # "1999 people" and "1950 units" count things; "the 2024 election" names a year.
    return not (after in _COUNT_NOUNS or (after.endswith("s") and not after.endswith("ss")))
