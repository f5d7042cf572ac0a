"""Kokoro's input: a phonemizer's symbols as Kokoro token ids.

Kokoro-82M reads one id per IPA symbol from a fixed table of 114 symbols (the model's ``vocab``,
as published with the model and its ONNX export). English comes from espeak-ng (the same
phonemizer Piper voices use) and is mapped to it the way the Kokoro ports that use espeak-ng do:
a few symbols espeak-ng writes and Kokoro's English never saw are respelled (``r`` -> ``ɹ``,
``x`` -> ``k``, ``ʲ`` -> ``j``, ``ɬ`` -> ``l``). Japanese comes from misaki's G2P, the phonemes
Kokoro was trained on, and is taken as it is (its ``kʲ`` is Kokoro's). Anything outside the
table is dropped. Respelling is one symbol for one, so the word ranges of the phonemizer still
index the phonemes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from voxflow.text.language import TextLanguage

# Kokoro-82M's symbol table (config.json "vocab" of hexgrad/Kokoro-82M; 0 is the pad).
VOCAB: dict[str, int] = {
    ";": 1,
    ":": 2,
    ",": 3,
    ".": 4,
    "!": 5,
    "?": 6,
    "—": 9,
    "…": 10,
    '"': 11,
    "(": 12,
    ")": 13,
    "“": 14,
    "”": 15,
    " ": 16,
    "̃": 17,
    "ʣ": 18,
    "ʥ": 19,
    "ʦ": 20,
    "ʨ": 21,
    "ᵝ": 22,
    "ꭧ": 23,
    "A": 24,
    "I": 25,
    "O": 31,
    "Q": 33,
    "S": 35,
    "T": 36,
    "W": 39,
    "Y": 41,
    "ᵊ": 42,
    "a": 43,
    "b": 44,
    "c": 45,
    "d": 46,
    "e": 47,
    "f": 48,
    "h": 50,
    "i": 51,
    "j": 52,
    "k": 53,
    "l": 54,
    "m": 55,
    "n": 56,
    "o": 57,
    "p": 58,
    "q": 59,
    "r": 60,
    "s": 61,
    "t": 62,
    "u": 63,
    "v": 64,
    "w": 65,
    "x": 66,
    "y": 67,
    "z": 68,
    "ɑ": 69,
    "ɐ": 70,
    "ɒ": 71,
    "æ": 72,
    "β": 75,
    "ɔ": 76,
    "ɕ": 77,
    "ç": 78,
    "ɖ": 80,
    "ð": 81,
    "ʤ": 82,
    "ə": 83,
    "ɚ": 85,
    "ɛ": 86,
    "ɜ": 87,
    "ɟ": 90,
    "ɡ": 92,
    "ɥ": 99,
    "ɨ": 101,
    "ɪ": 102,
    "ʝ": 103,
    "ɯ": 110,
    "ɰ": 111,
    "ŋ": 112,
    "ɳ": 113,
    "ɲ": 114,
    "ɴ": 115,
    "ø": 116,
    "ɸ": 118,
    "θ": 119,
    "œ": 120,
    "ɹ": 123,
    "ɾ": 125,
    "ɻ": 126,
    "ʁ": 128,
    "ɽ": 129,
    "ʂ": 130,
    "ʃ": 131,
    "ʈ": 132,
    "ʧ": 133,
    "ʊ": 135,
    "ʋ": 136,
    "ʌ": 138,
    "ɣ": 139,
    "ɤ": 140,
    "χ": 142,
    "ʎ": 143,
    "ʒ": 147,
    "ʔ": 148,
    "ˈ": 156,
    "ˌ": 157,
    "ː": 158,
    "ʰ": 162,
    "ʲ": 164,
    "↓": 169,
    "→": 171,
    "↗": 172,
    "↘": 173,
    "ᵻ": 177,
}
PAD = 0
# Kokoro reads at most 512 tokens: the text's ids plus a pad on each side.
MAX_IDS = 510
_RESPELLINGS: dict[TextLanguage, Mapping[str, str]] = {
    TextLanguage.ENGLISH: {"r": "ɹ", "x": "k", "ʲ": "j", "ɬ": "l"},
    TextLanguage.JAPANESE: {},
}


def respelling_for(language: TextLanguage) -> Mapping[str, str]:
    """How a language's phonemizer's symbols are respelled for Kokoro (module docstring)."""
    return _RESPELLINGS[language]


@dataclass(frozen=True)
class KokoroIds:
    """The token ids of a phoneme sequence and, per id, the index of the phoneme it came from."""

    ids: tuple[int, ...]
    owner: npt.NDArray[np.int64]


def kokoro_ids(phonemes: tuple[str, ...], respell: Mapping[str, str]) -> KokoroIds:
    """Ids for ``phonemes`` (one symbol each, as the phonemizers give them), respelled by
    ``respell`` (``respelling_for``); a symbol outside ``VOCAB`` after that is dropped."""
    ids: list[int] = []
    owner: list[int] = []
    for index, phoneme in enumerate(phonemes):
        for symbol in phoneme:  # a merged cluster is several symbols
            token = VOCAB.get(respell.get(symbol, symbol))
            if token is not None:
                ids.append(token)
                owner.append(index)
    return KokoroIds(tuple(ids), np.array(owner, dtype=np.int64))
