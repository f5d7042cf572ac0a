"""Text as an LLM streams it: tokens of about four characters, words carrying their leading space.

BPE tokenizers (GPT-style) first cut text into pre-tokens (a word with the space before it, a
run of up to three digits, a run of punctuation, whitespace), then split rare or long words into
sub-word pieces. ``llm_tokens`` does the same deterministically, splitting words of more than
six letters into pieces of four, so that a reply streams as an agent's LLM would send it:
" reschedule" arrives as " resc", "hedu", "le", and a sentence end is confirmed only when the
next token arrives.

Japanese has no spaces, so a pre-token of it would be a whole clause: a run of Japanese script
(kana, kanji) is cut instead where the script changes (kanji, hiragana, katakana), and each of
those runs into pieces of at most ``_KANJI_PIECE`` kanji or ``_KANA_PIECE`` kana
(``japanese_tokens``). That gives tokens of one to three characters, about two on average, as
GPT-style tokenizers cut Japanese ("かしこまりました" arrives as "かしこ", "まりま", "した"):
a sentence's first clause never arrives whole in one token. Digits and punctuation (、。) are
pre-tokens as in English text.

Invariant: ``"".join(llm_tokens(text)) == text``, every token is non-empty.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator, Sequence

__all__ = ["japanese_tokens", "llm_tokens", "paced"]

# Japanese script by kind: a token never mixes two of them (``japanese_tokens``). The long-vowel
# mark ー goes with katakana, the iteration and closing marks 々〆〇 with kanji; the middle dot ・
# (U+30FB) is punctuation.
_HIRAGANA = "\u3041-\u309f"
_KATAKANA = "\u30a1-\u30fa\u30fc-\u30ff\uff66-\uff9f"
_KANJI = "\u3005-\u3007\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_JAPANESE = _HIRAGANA + _KATAKANA + _KANJI
_SCRIPT_RUN = re.compile(f"[{_HIRAGANA}]+|[{_KATAKANA}]+|[{_KANJI}]+")
_KANJI_RUN = re.compile(f"[{_KANJI}]+")
_KANJI_PIECE = 2  # kanji a token: common compounds (予定, 確認) are one token, rarer ones two
_KANA_PIECE = 3  # kana a token: ます, でしょ, ました

_PRETOKEN = re.compile(
    r"'(?:s|t|re|ve|m|ll|d)\b"  # English contractions, as GPT tokenizers split them
    f"| ?[{_JAPANESE}]+"  # a run of Japanese script (cut further by japanese_tokens)
    f"| ?[^\\W\\d_{_JAPANESE}]+"  # a word and its leading space
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
        if _SCRIPT_RUN.match(word):
            tokens.extend(japanese_tokens(token))
            continue
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


def japanese_tokens(text: str) -> list[str]:
    """A run of Japanese script as LLM-style tokens: cut where the script changes, then into
    pieces of at most two kanji or three kana (a last piece of one character stays one: tokens
    are one to three characters). Anything before the first Japanese character (a leading
    space) goes with the first token; their concatenation is ``text``."""
    tokens: list[str] = []
    done = 0
    for run in _SCRIPT_RUN.finditer(text):
        size = _KANJI_PIECE if _KANJI_RUN.fullmatch(run.group()) else _KANA_PIECE
        for start in range(run.start(), run.end(), size):
            tokens.append(text[done : min(start + size, run.end())])
            done = min(start + size, run.end())
    if done < len(text):  # no Japanese at all, or something after the last run
        if tokens:
            tokens[-1] += text[done:]
        else:
            tokens.append(text)
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
