from __future__ import annotations

import json

import pytest

from voxflow.engines.registry import VoiceRegistry
from voxflow.text.arpabet import CONSONANTS, VOWELS, to_ipa


def _voice_symbols() -> set[str]:
    config = json.loads(VoiceRegistry().get("joe").config_path.read_text(encoding="utf-8"))
    return set(config["phoneme_id_map"])


def test_every_converted_symbol_is_in_the_bundled_voice() -> None:
    known = _voice_symbols()
    spellings = [to_ipa(c) for c in CONSONANTS]
    spellings += [to_ipa(f"{v}{stress}") for v in VOWELS for stress in ("", "0", "1", "2")]
    missing = {char for spelling in spellings for char in spelling if char not in known}
    assert not missing, f"not in the voice's phoneme_id_map: {sorted(missing)}"


@pytest.mark.parametrize(
    ("arpabet", "ipa"),
    [
        ("T AH0 M EY1 T OW2", "təmˈeɪtˌoʊ"),
        ("HH AH0 L OW1", "həlˈoʊ"),
        ("B ER1 D", "bˈɜːd"),
        ("B AH1 T ER0", "bˈʌtɚ"),
        ("CH ER1 CH", "tʃˈɜːtʃ"),
        ("JH AH1 JH", "dʒˈʌdʒ"),
        ("g ih1 v", "ɡˈɪv"),  # lower case is read too
        ("S IH1 NG ER0", "sˈɪŋɚ"),
    ],
)
def test_golden(arpabet: str, ipa: str) -> None:
    assert to_ipa(arpabet) == ipa


@pytest.mark.parametrize("bad", ["", "   ", "XX", "T1", "AH3", "AH-1", "T AH0 M Ö"])
def test_refuses_what_is_not_arpabet(bad: str) -> None:
    with pytest.raises(ValueError, match="ARPAbet"):
        to_ipa(bad)
