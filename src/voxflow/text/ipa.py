"""IPA that users write, placed as the voices read it: stress marks before the stressed vowel.

The IPA convention puts a stress mark (U+02C8 primary, U+02CC secondary) at the start of the
stressed syllable, before its onset: the mark, then ``wɛðɚ`` ("weather"). espeak-ng, which
phonemized every voice's training data (Piper's and Kokoro's), writes it before the syllable's
vowel: ``w``, the mark, ``ɛðɚ``. A voice reads the mark as part of the vowel that follows it,
so an onset-placed mark stresses nothing it knows and moves the consonant into a shape it never
saw: Whisper hears the onset-placed spelling spoken by the bundled voice as "water" for three
seeds of four, and espeak-ng's as "weather" for all four.

:func:`espeak_stress` moves each mark over the consonants that follow it to the first vowel of
its syllable. A mark already before a vowel stays where it is, so espeak-ng's own spelling, and
the ARPAbet conversion's (``voxflow.text.arpabet``), come back unchanged. A mark with no vowel
before the next syllable break (a syllabic consonant, or a mark at the end) is left as written.
"""

from __future__ import annotations

__all__ = ["PRIMARY", "SECONDARY", "STRESS_MARKS", "VOWELS", "espeak_stress"]

PRIMARY = "\u02c8"
SECONDARY = "\u02cc"
STRESS_MARKS = frozenset({PRIMARY, SECONDARY})

# The IPA vowel letters (and espeak-ng's r-coloured and reduced ones). A diphthong or a long
# vowel starts with one of these; its second part or length mark follows the stress mark's
# vowel, so only the first letter matters.
VOWELS = frozenset("aeiouyæɑɒɐɔəɚɛɜɝɞɘɵɤɯɨʉɪʏʊʌøœɶᵻ")

# What ends a syllable's onset without a vowel: a space, a syllable break, another mark.
_BREAKS = frozenset(" .|\u2016") | STRESS_MARKS


def espeak_stress(ipa: str) -> str:
    """``ipa`` with each stress mark moved from before its syllable's onset to before its
    vowel (the module docstring)."""
    if not STRESS_MARKS.intersection(ipa):
        return ipa
    out: list[str] = []
    i = 0
    while i < len(ipa):
        char = ipa[i]
        if char not in STRESS_MARKS:
            out.append(char)
            i += 1
            continue
        j = i + 1
        while j < len(ipa) and ipa[j] not in VOWELS and ipa[j] not in _BREAKS:
            j += 1
        if j < len(ipa) and ipa[j] in VOWELS:
            out.append(ipa[i + 1 : j])  # the onset, then the mark before the vowel
            out.append(char)
            i = j
        else:  # no vowel in its syllable: leave it as written
            out.append(char)
            i += 1
    return "".join(out)
