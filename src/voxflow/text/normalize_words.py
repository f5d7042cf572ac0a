"""The normalizer's rules for words and symbols, gathered in one place for ``normalize``.

Each concept lives in its own module, with the decisions it takes for ambiguous input:

* ``normalize_acronyms``: acronyms, dotted initialisms, mixed letter/digit tokens, shouting;
* ``normalize_abbreviations``: titles and other abbreviations ("Dr.", "St.", "No. 5");
* ``normalize_roman``: Roman numerals ("World War II", "Elizabeth II");
* ``normalize_addresses``: URLs and e-mail addresses;
* ``normalize_symbols``: stand-alone symbols ("&", "#5");
* ``normalize_letters``: spelling and the token-edge test they share.

This module only re-exports them, so that ``normalize`` (and anything else) keeps one import
path for the word rules.
"""

from __future__ import annotations

from voxflow.text.normalize_abbreviations import abbreviation_rule
from voxflow.text.normalize_acronyms import (
    COMMON_WORDS,
    KNOWN_SPELLED,
    READ_ACRONYMS,
    acronym_rule,
    initialism_rule,
    is_shouting,
    mixed_token_rule,
)
from voxflow.text.normalize_addresses import email_rule, url_rule
from voxflow.text.normalize_letters import spell
from voxflow.text.normalize_roman import roman_rule
from voxflow.text.normalize_symbols import symbol_rule

__all__ = [
    "COMMON_WORDS",
    "KNOWN_SPELLED",
    "READ_ACRONYMS",
    "abbreviation_rule",
    "acronym_rule",
    "email_rule",
    "initialism_rule",
    "is_shouting",
    "mixed_token_rule",
    "roman_rule",
    "spell",
    "symbol_rule",
    "url_rule",
]
