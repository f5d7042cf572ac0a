"""Pronunciation lexicon: whole words respelled, or given as raw phonemes.

An entry either respells a word in ordinary letters that espeak-ng reads the intended way
("voxflow" -> "vox flow") or gives its phonemes directly. The normalizer writes phoneme entries
in Piper's raw-phoneme syntax, ``[[ phonemes ]]``: piper-tts passes text inside double brackets
to the voice model as phonemes without asking espeak-ng (``_PHONEME_BLOCK_PATTERN`` in
``piper/voice.py``). :func:`split_phoneme_blocks` splits such text for a phonemizer that
handles the blocks itself.

File format, UTF-8, one entry per line::

    # comment
    voxflow<TAB>vox flow
    Nguyen<TAB>[[wən]]

Blank lines and lines whose first non-blank character is ``#`` are ignored. Words are matched
case-insensitively and only as whole words; a word may not contain whitespace.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from voxflow.text.ipa import espeak_stress

__all__ = [
    "PHONEME_BLOCK",
    "Lexicon",
    "LexiconEntry",
    "TextPart",
    "phoneme_block",
    "split_phoneme_blocks",
]

# The same pattern piper-tts uses, so that what we write is what piper reads.
PHONEME_BLOCK = re.compile(r"\[\[(.*?)\]\]", re.DOTALL)


@dataclass(frozen=True)
class LexiconEntry:
    """How to say ``word``: exactly one of ``respelling`` and ``phonemes`` is set."""

    word: str
    respelling: str | None = None
    phonemes: str | None = None

    def __post_init__(self) -> None:
        if not self.word or any(char.isspace() for char in self.word):
            raise ValueError(f"lexicon word must be non-empty without whitespace: {self.word!r}")
        if (self.respelling is None) == (self.phonemes is None):
            raise ValueError(
                f"lexicon entry {self.word!r} needs exactly one of respelling and phonemes"
            )
        value = self.respelling if self.respelling is not None else (self.phonemes or "")
        if not value.strip():
            raise ValueError(f"lexicon entry {self.word!r} has an empty pronunciation")
        if "[[" in value or "]]" in value:
            # Brackets inside would end or nest Piper's raw-phoneme block.
            raise ValueError(f"lexicon entry {self.word!r} may not contain '[[' or ']]'")
        if "\n" in value:
            raise ValueError(f"lexicon entry {self.word!r} may not span lines")

    @property
    def spoken(self) -> str:
        """The text that replaces the word: the respelling, or the phonemes as a Piper block."""
        if self.phonemes is not None:
            return phoneme_block(self.phonemes)
        return (self.respelling or "").strip()


def phoneme_block(phonemes: str) -> str:
    """Piper's raw-phoneme syntax for ``phonemes`` (IPA), its stress marks where the voices
    read them (``voxflow.text.ipa``): every phoneme a user writes comes through here."""
    return f"[[ {espeak_stress(phonemes.strip())} ]]"


def _key(word: str) -> str:
    return word.casefold()


class Lexicon:
    """An immutable set of entries keyed by case-folded word; later entries win."""

    def __init__(self, entries: Iterable[LexiconEntry] = ()) -> None:
        by_word: dict[str, LexiconEntry] = {}
        for entry in entries:
            by_word[_key(entry.word)] = entry
        self._by_word = by_word

    @classmethod
    def from_text(cls, text: str, source: str = "<lexicon>") -> Lexicon:
        """Parse lexicon lines; a bad line raises ``ValueError`` naming ``source`` and its
        line number. A word listed twice is an error too, since one of the two would be
        silently lost."""
        entries: list[LexiconEntry] = []
        seen: dict[str, int] = {}
        for number, raw in enumerate(text.splitlines(), start=1):
            if not raw.strip() or raw.lstrip().startswith("#"):
                continue
            where = f"{source}:{number}"
            if "\t" not in raw:
                raise ValueError(f"{where}: expected 'word<TAB>respelling', got {raw!r}")
            word, _, value = raw.partition("\t")
            word, value = word.strip(), value.strip()
            if not word or not value:
                raise ValueError(f"{where}: both a word and a pronunciation are required")
            try:
                entry = _parse_value(word, value)
            except ValueError as error:
                raise ValueError(f"{where}: {error}") from None
            key = _key(word)
            if key in seen:
                raise ValueError(f"{where}: {word!r} is already defined on line {seen[key]}")
            seen[key] = number
            entries.append(entry)
        return cls(entries)

    def merged(self, other: Lexicon) -> Lexicon:
        """This lexicon with ``other``'s entries added, ``other`` winning on the same word
        (per-request entries over server-wide ones)."""
        return Lexicon([*self._by_word.values(), *other._by_word.values()])

    def lookup(self, word: str) -> LexiconEntry | None:
        """The entry for ``word``, ignoring case."""
        return self._by_word.get(_key(word))

    @property
    def entries(self) -> tuple[LexiconEntry, ...]:
        return tuple(self._by_word.values())

    def __len__(self) -> int:
        return len(self._by_word)

    def __bool__(self) -> bool:
        return bool(self._by_word)

    def __iter__(self) -> Iterator[LexiconEntry]:
        return iter(self.entries)

    def __repr__(self) -> str:
        return f"Lexicon({len(self)} entries)"


def _parse_value(word: str, value: str) -> LexiconEntry:
    if value.startswith("[["):
        if not value.endswith("]]") or len(value) < 4:
            raise ValueError(f"phonemes of {word!r} must be written [[phonemes]], got {value!r}")
        return LexiconEntry(word, phonemes=value[2:-2].strip())
    if "\t" in value:
        raise ValueError(f"{word!r} has more than one tab-separated pronunciation")
    return LexiconEntry(word, respelling=value)


@dataclass(frozen=True)
class TextPart:
    """A run of text (``phonemes`` False) or the inside of a ``[[ ]]`` block (True); ``start``
    and ``end`` locate the whole run, brackets included, in the text that was split."""

    text: str
    start: int
    end: int
    phonemes: bool


def split_phoneme_blocks(text: str) -> tuple[TextPart, ...]:
    """Split ``text`` into plain runs and raw-phoneme blocks, in order, covering it exactly
    (empty plain runs are left out)."""
    parts: list[TextPart] = []
    cursor = 0
    for block in PHONEME_BLOCK.finditer(text):
        if block.start() > cursor:
            parts.append(TextPart(text[cursor : block.start()], cursor, block.start(), False))
        parts.append(TextPart(block.group(1).strip(), block.start(), block.end(), True))
        cursor = block.end()
    if cursor < len(text):
        parts.append(TextPart(text[cursor:], cursor, len(text), False))
    return tuple(parts)
