"""CMU ARPAbet to the IPA that Piper's espeak-trained voices know.

Pronunciation dictionaries (PLS files with ``alphabet="x-cmu"``, ElevenLabs rules with
``"alphabet": "cmu-arpabet"``) write phonemes as ARPAbet symbols separated by spaces, vowels
carrying a stress digit: ``T AH0 M EY1 T OW2``. A Piper voice reads IPA as espeak-ng writes it
for American English, one symbol per character of its ``phoneme_id_map``, with the stress mark
(U+02C8, U+02CC) in front of the stressed vowel. The table below maps each symbol to that
spelling: espeak's long vowels (with U+02D0), the script g (U+0261, the only g the voice has),
the turned r (U+0279), and the affricates as two characters, since the voice has no ligatures.
``tests/text/test_arpabet.py`` holds every output character against the bundled voice's map.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType

from voxflow.text.ipa import PRIMARY, SECONDARY

__all__ = ["CONSONANTS", "VOWELS", "to_ipa"]


# Stressed (1, 2, or no digit) spelling; the unstressed one, where it differs, in _REDUCED.
VOWELS: Mapping[str, str] = MappingProxyType(
    {
        "AA": "ɑː",
        "AE": "æ",
        "AH": "ʌ",
        "AO": "ɔː",
        "AW": "aʊ",
        "AY": "aɪ",
        "EH": "ɛ",
        "ER": "ɜː",
        "EY": "eɪ",
        "IH": "ɪ",
        "IY": "iː",
        "OW": "oʊ",
        "OY": "ɔɪ",
        "UH": "ʊ",
        "UW": "uː",
        # The extended set some dictionaries use for reduced vowels.
        "AX": "ə",
        "AXR": "ɚ",
        "IX": "ɪ",
        "UX": "uː",
    }
)
# espeak writes an unstressed AH as schwa and an unstressed ER as r-coloured schwa.
_REDUCED: Mapping[str, str] = MappingProxyType({"AH": "ə", "ER": "ɚ"})

CONSONANTS: Mapping[str, str] = MappingProxyType(
    {
        "B": "b",
        "CH": "tʃ",
        "D": "d",
        "DH": "ð",
        "DX": "ɾ",
        "EL": "əl",
        "EM": "əm",
        "EN": "ən",
        "F": "f",
        "G": "ɡ",
        "HH": "h",
        "JH": "dʒ",
        "K": "k",
        "L": "l",
        "M": "m",
        "N": "n",
        "NG": "ŋ",
        "NX": "ŋ",
        "P": "p",
        "Q": "ʔ",
        "R": "ɹ",
        "S": "s",
        "SH": "ʃ",
        "T": "t",
        "TH": "θ",
        "V": "v",
        "W": "w",
        "WH": "w",
        "Y": "j",
        "Z": "z",
        "ZH": "ʒ",
    }
)

_SYMBOL = re.compile(r"([A-Za-z]+)([012])?")
MAX_SYMBOLS = 200  # one word's phonemes; a longer string is a mistake, not a word


def to_ipa(arpabet: str) -> str:
    """The IPA for a space-separated ARPAbet string; ``ValueError`` naming the first symbol
    that is not ARPAbet (a stress digit on a consonant included)."""
    symbols = arpabet.split()
    if not symbols:
        raise ValueError("an ARPAbet pronunciation needs at least one symbol")
    if len(symbols) > MAX_SYMBOLS:
        raise ValueError(f"an ARPAbet pronunciation has at most {MAX_SYMBOLS} symbols")
    spoken: list[str] = []
    for symbol in symbols:
        match = _SYMBOL.fullmatch(symbol)
        name = match.group(1).upper() if match is not None else ""
        stress = match.group(2) if match is not None else None
        if name in VOWELS:
            if stress == "0":
                spoken.append(_REDUCED.get(name, VOWELS[name]))
            else:
                mark = {"1": PRIMARY, "2": SECONDARY}.get(stress or "", "")
                spoken.append(mark + VOWELS[name])
        elif name in CONSONANTS and stress is None:
            spoken.append(CONSONANTS[name])
        else:
            raise ValueError(f"{symbol!r} is not a CMU ARPAbet symbol")
    return "".join(spoken)
