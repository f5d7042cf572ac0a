"""Text as an LLM streams it: tokens of about four characters, words carrying their leading space.

BPE tokenizers (GPT-style) first cut text into pre-tokens (a word with the space before it, a
run of up to three digits, a run of punctuation, whitespace), then split rare or long words into
sub-word pieces. ``llm_tokens`` does the same deterministically, splitting words of more than
six letters into pieces of four, so that a reply streams as an agent's LLM would send it:
" reschedule" arrives as " resc", "hedu", "le", and a sentence end is confirmed only when the
next token arrives.

Invariant: ``"".join(llm_tokens(text)) == text``, every token is non-empty.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator, Sequence

__all__ = ["llm_tokens", "paced"]

_PRETOKEN = re.compile(
    r"'(?:s|t|re|ve|m|ll|d)\b"  # English contractions, as GPT tokenizers split them
    r"| ?[^\W\d_]+"  # a word and its leading space
    r"| ?\d{1,3}"  # digits, at most three at a time
    r"| ?[^\s\w]+"  # punctuation and symbols
    r"|\s+(?=\s)|\s+"  # whitespace (a space before a word goes with the word)
    r"|.",  # anything else, one character at a time
    re.DOTALL,
)
_PIECE = 4  # letters per piece of a long word
_LONG = 6  # words longer than this are split


def llm_tokens(text: str) -> list[str]:
    """``text`` as LLM-style tokens (see the module docstring)."""
    tokens: list[str] = []
    for match in _PRETOKEN.finditer(text):
        token = match.group()
        word = token.lstrip(" ")
        if len(word) <= _LONG or not word.isalpha():
            tokens.append(token)
            continue
        space = token[: len(token) - len(word)]
        pieces = [word[i : i + _PIECE] for i in range(0, len(word), _PIECE)]
        if len(pieces) > 1 and len(pieces[-1]) < 2:
            tail = pieces.pop()
            pieces[-1] += tail
        pieces[0] = space + pieces[0]
        tokens.extend(pieces)
    return tokens


def paced(tokens: Sequence[str], rate: float) -> Iterator[str]:
    """``tokens`` at ``rate`` a second, as an LLM streams them: token ``i`` at ``i / rate`` s
    after the first is asked for, on that absolute schedule (a late reader delays one token,
    not every one after it)."""
    if rate <= 0:
        raise ValueError(f"the token rate must be > 0, got {rate}")
    return _paced(tokens, rate)


def _paced(tokens: Sequence[str], rate: float) -> Iterator[str]:
    begin = time.monotonic()
    for index, token in enumerate(tokens):
        delay = begin + index / rate - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        yield token
