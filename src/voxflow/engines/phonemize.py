"""espeak-ng phonemization (through piper-tts) with a map from phonemes back to words of the text.

espeak-ng phonemizes whole clauses and freely merges or splits words ("e.g." becomes "for example",
"1999" becomes three words), so a phoneme cannot be traced to its word by counting spaces. Instead
each word of the text is also phonemized on its own (tens of microseconds a word), and the
concatenation of those is aligned to the sentence's phoneme string with a longest-matching-block
diff. Every phoneme then belongs to exactly one word, the words' phoneme ranges are contiguous and
in text order, and a word that espeak dropped gets an empty range where it stood.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher

from piper import espeakbridge
from piper.phonemize_espeak import EspeakPhonemizer

from voxflow.text.ipa import STRESS_MARKS
from voxflow.text.lexicon import split_phoneme_blocks


class _Espeak:
    """espeak-ng's process-global C state: its voice and buffers. Calls from two threads (or two
    engines) must never interleave, whatever object issued them, and every espeak call of the
    process goes through here.

    The voice is set only when it changes. piper's ``EspeakPhonemizer.phonemize`` sets it on
    every call, and espeak-ng's ``espeak_SetVoiceByName`` leaks about 1.3 KiB each time
    (5.2 MiB over 4,000 calls, measured): a server's resident size grew by ~1.7 MiB per 1,000
    requests (docs/reliability.md, the soak)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self._voice: str | None = None
        self._ready = False

    def clauses(self, voice: str, text: str) -> list[tuple[str, str, bool]]:
        """espeak-ng's clauses of ``text``: (phonemes, terminator, ends a sentence)."""
        with self.lock:
            if not self._ready:
                EspeakPhonemizer()  # loads espeak-ng with piper's bundled data, once
                self._ready = True
            if voice != self._voice:
                espeakbridge.set_voice(voice)
                self._voice = voice
            return espeakbridge.get_phonemes(text)

    def forget_voice(self) -> None:
        """Someone else set espeak-ng's voice (with ``lock`` held): set it again next time."""
        self._voice = None


_ESPEAK = _Espeak()
_LANGUAGE_SWITCH = re.compile(r"\([^)]+\)")  # "(en)...(fr)": a word from another language

_TOKEN = re.compile(r"\S+")
_EDGE_PUNCT = "\"'()[]{}<>«»“”‘’,;:!?.…—–-"
_NON_PHONE = set(" ,.;:!?-'\"()…—–")
# Words phonemized on their own for the word alignment, remembered per phonemizer: replies reuse
# a small vocabulary, and each espeak-ng call takes the process-wide lock.
_WORD_CACHE_SIZE = 8192


@dataclass(frozen=True)
class TextWord:
    """A whitespace-delimited word of the text, without surrounding punctuation."""

    word: str
    char_start: int
    char_end: int


@dataclass(frozen=True)
class Phonemized:
    """Phonemes of a text and, for each word, the half-open range of phonemes it produced."""

    phonemes: tuple[str, ...]
    words: tuple[TextWord, ...]
    word_phonemes: tuple[tuple[int, int], ...]


class Phonemizer:
    """Thread-safe espeak-ng phonemizer for one espeak voice (e.g. ``en-us``)."""

    def __init__(
        self, espeak_voice: str, vowel_clusters: set[tuple[str, ...]] | None = None
    ) -> None:
        self._voice = espeak_voice
        self._vowel_clusters = vowel_clusters
        self._words: OrderedDict[str, tuple[str, ...]] = OrderedDict()
        self._words_lock = threading.Lock()

    def phonemes(self, text: str) -> list[str]:
        """Phonemes of ``text``, sentences joined by a space (one utterance, one text stage).

        ``[[ ... ]]`` blocks (pronunciation lexicon entries) are raw phonemes, passed through as
        Piper itself does; the rest goes to espeak-ng.
        """
        return _joined(
            list(part.text) if part.phonemes else self._espeak(part.text)
            for part in split_phoneme_blocks(text)
        )

    def _espeak(self, text: str) -> list[str]:
        return _joined(espeak_sentences(self._voice, text, self._vowel_clusters))

    def phonemize(self, text: str) -> Phonemized:
        """Phonemes of ``text`` plus each word's phoneme range."""
        phonemes = self.phonemes(text)
        words = text_words(text)
        blocks = [(part.start, part.end) for part in split_phoneme_blocks(text) if part.phonemes]
        word_phonemes = [
            list(w.word)
            if any(lo <= w.char_start < hi for lo, hi in blocks)
            else self._word_phonemes(w.word)
            for w in words
        ]
        ranges = align_words(phonemes, word_phonemes)
        return Phonemized(tuple(phonemes), tuple(words), tuple(ranges))

    def _word_phonemes(self, word: str) -> list[str]:
        """``phonemes(word)``, from a bounded least-recently-used cache (a word alone always
        reads the same)."""
        with self._words_lock:
            known = self._words.get(word)
            if known is not None:
                self._words.move_to_end(word)
                return list(known)
        phonemes = self.phonemes(word)
        with self._words_lock:
            self._words[word] = tuple(phonemes)
            if len(self._words) > _WORD_CACHE_SIZE:
                self._words.popitem(last=False)
        return phonemes


def espeak_sentences(
    voice: str, text: str, vowel_clusters: set[tuple[str, ...]] | None = None
) -> list[list[str]]:
    """Phonemes of ``text`` by sentence, as piper's ``EspeakPhonemizer.phonemize`` gives them
    (the same steps, tested against it) without its voice change on every call."""
    sentences: list[list[str]] = []
    sentence: list[str] = []
    for clause, terminator, ends_sentence in _ESPEAK.clauses(voice, text):
        # Punctuation is kept (the model reads it); a clause that goes on gets a space.
        phonemes = _LANGUAGE_SWITCH.sub("", clause) + terminator
        if terminator in (",", ":", ";"):
            phonemes += " "
        # One "phoneme" per code point, accents apart.
        sentence.extend(unicodedata.normalize("NFD", phonemes))
        if ends_sentence:
            sentences.append(_merge_vowel_clusters(sentence, vowel_clusters))
            sentence = []
    if sentence:
        sentences.append(_merge_vowel_clusters(sentence, vowel_clusters))
    return sentences


def _merge_vowel_clusters(phonemes: list[str], clusters: set[tuple[str, ...]] | None) -> list[str]:
    """Runs of phonemes that the voice knows as one (its ``vowel_clusters``), longest first."""
    if not clusters:
        return phonemes
    longest = max(len(cluster) for cluster in clusters)
    merged: list[str] = []
    i = 0
    while i < len(phonemes):
        for n in range(min(longest, len(phonemes) - i), 1, -1):
            if tuple(phonemes[i : i + n]) in clusters:
                merged.append("".join(phonemes[i : i + n]))
                i += n
                break
        else:
            merged.append(phonemes[i])
            i += 1
    return merged


def _joined(pieces: Iterable[list[str]]) -> list[str]:
    """Phoneme lists joined by one space, without empty pieces or trailing spaces."""
    flat: list[str] = []
    for piece in pieces:
        if not piece:
            continue
        if flat and flat[-1] != " ":
            flat.append(" ")
        flat.extend(piece)
    while flat and flat[-1] == " ":
        flat.pop()
    return flat


def text_words(text: str) -> list[TextWord]:
    """Whitespace-delimited tokens with edge punctuation stripped; pure punctuation is dropped."""
    words: list[TextWord] = []
    for match in _TOKEN.finditer(text):
        token = match.group()
        left = len(token) - len(token.lstrip(_EDGE_PUNCT))
        stripped = token.strip(_EDGE_PUNCT)
        if not stripped:
            continue
        # Keep a final period that belongs to the word ("U.S.", "p.m."), not one that ends a
        # sentence.
        end = left + len(stripped)
        if token[end : end + 1] == "." and "." in stripped:
            stripped += "."
        start = match.start() + left
        words.append(TextWord(stripped, start, start + len(stripped)))
    return words


def _phone_chars(phonemes: Sequence[str]) -> tuple[str, list[int]]:
    """The phoneme string without spaces, punctuation and stress marks, and each char's source
    index."""
    chars: list[str] = []
    index: list[int] = []
    for i, phoneme in enumerate(phonemes):
        for char in unicodedata.normalize("NFD", phoneme):
            if char in _NON_PHONE or char in STRESS_MARKS:
                continue
            chars.append(char)
            index.append(i)
    return "".join(chars), index


def align_words(
    phonemes: Sequence[str], word_phonemes: Sequence[Sequence[str]]
) -> list[tuple[int, int]]:
    """For each word, the half-open range of ``phonemes`` it produced (contiguous, in order)."""
    if not word_phonemes:
        return []
    full, full_index = _phone_chars(phonemes)
    reference_parts = [_phone_chars(p)[0] for p in word_phonemes]
    reference = "".join(reference_parts)
    owner_of_ref: list[int] = []
    for word, part in enumerate(reference_parts):
        owner_of_ref.extend([word] * len(part))

    owner: list[int | None] = [None] * len(full)
    matcher = SequenceMatcher(None, reference, full, autojunk=False)
    for block in matcher.get_matching_blocks():
        for k in range(block.size):
            owner[block.b + k] = owner_of_ref[block.a + k]

    # Unmatched phonemes go to the word before them (or the first word); then make owners
    # non-decreasing so that every word owns one contiguous run.
    last = 0
    resolved: list[int] = []
    for who in owner:
        current = last if who is None else max(who, last)
        resolved.append(current)
        last = current

    ranges: list[tuple[int, int]] = []
    cursor = 0
    for word in range(len(word_phonemes)):
        indices = [full_index[i] for i, who in enumerate(resolved) if who == word]
        if indices:
            start = max(cursor, indices[0])
            end = max(start, indices[-1] + 1)
            # A stress mark before the word's first phoneme is skipped by the matching, but the
            # voice spends its frames there sounding the (stressed) first vowel: it is the word's.
            while start > cursor and phonemes[start - 1] in STRESS_MARKS:
                start -= 1
        else:
            start = end = cursor
        ranges.append((start, end))
        cursor = end
    return ranges
