"""Where a sentence may be cut early without sounding broken, and what a piece of text costs.

The first segment of a reply is on the time-to-first-audio path: the text stage costs about
0.6 ms per spoken character, so a 120-character first clause costs ~80 ms before any audio. When
no clause mark comes early, the segmenter cuts the first segment at a *phrase boundary*: a word
boundary followed by a word that usually opens a phrase (a conjunction, a preposition, a relative
or interrogative word). Cutting there keeps each piece a plausible unit of speech ("I can help
you reschedule | to next Tuesday") rather than splitting a noun from its article.

Cost is counted in estimated *spoken* characters, because the normalizer expands some written
characters a lot before the text stage sees them: a digit becomes four to six letters ("7" ->
"seven"), a currency or percent sign a word. ``spoken_cost`` is that estimate; it only has to
rank and bound, not to be exact.
"""

from __future__ import annotations

__all__ = ["PHRASE_STARTERS", "spoken_cost", "starts_phrase"]

# Words that usually begin a phrase. "of" and the articles are left out on purpose: a cut
# before them separates a head from what completes it ("the rest | of the day", "help | the").
PHRASE_STARTERS = frozenset(
    {
        # coordinating and subordinating conjunctions
        "and", "but", "or", "nor", "so", "yet", "because", "if", "unless", "when", "whenever",
        "while", "although", "though", "since", "until", "till", "before", "after", "once",
        "as", "than", "whether", "whereas", "then",
        # prepositions
        "to", "for", "with", "without", "within", "on", "at", "in", "into", "onto", "from",
        "about", "by", "over", "under", "through", "during", "between", "across", "around",
        "near", "like", "toward", "towards", "against", "along", "behind", "beyond", "via",
        "per", "past", "up", "down", "off", "out", "upon",
        # relative and interrogative words
        "that", "which", "who", "whom", "whose", "where", "what", "how", "why",
        # discourse words that open a new thought
        "please", "just", "also", "even", "still", "instead", "otherwise", "especially",
    }
)  # fmt: skip

_EDGE = "\"'([{«“‘"

# Estimated spoken characters per written character, for characters the normalizer expands.
_EXPANSION = {
    **dict.fromkeys("0123456789", 5),  # "7" -> "seven", "1999" -> "nineteen ninety-nine"
    **dict.fromkeys("$€£¥%", 8),  # "dollars", "percent"
    **dict.fromkeys("&@#+=", 5),  # "and", "at", "number", "plus", "equals"
    **dict.fromkeys("/", 4),  # "slash", "over", a date's separator
}


def starts_phrase(word: str) -> bool:
    """Whether ``word`` (a whitespace-delimited token) usually opens a phrase."""
    return word.lstrip(_EDGE).lower() in PHRASE_STARTERS


def spoken_cost(text: str) -> int:
    """Estimated length of ``text`` once normalized into words (see the module docstring)."""
    return sum(_EXPANSION.get(char, 1) for char in text)
