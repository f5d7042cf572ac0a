"""Pronunciation dictionaries as W3C PLS documents and as rules (no I/O).

A PLS lexicon (https://www.w3.org/TR/pronunciation-lexicon/) lists lexemes, each with one or more
``<grapheme>`` (the written word) and its pronunciations: ``<alias>`` (another spelling, read by
espeak-ng) or ``<phoneme>`` (in the lexicon's ``alphabet``, which a phoneme may override)::

    <lexicon version="1.0" xmlns="http://www.w3.org/2005/01/pronunciation-lexicon"
             alphabet="x-cmu" xml:lang="en-US">
      <lexeme><grapheme>voxflow</grapheme><alias>vox flow</alias></lexeme>
      <lexeme><grapheme>tomato</grapheme><phoneme>T AH0 M AA1 T OW2</phoneme></lexeme>
    </lexicon>

Alphabets: ``ipa``, and CMU ARPAbet as ``x-cmu`` or ``cmu-arpabet`` (ElevenLabs' names),
converted to IPA by ``voxflow.text.arpabet``; no ``alphabet`` means ``ipa``. A lexeme speaks its
pronunciation marked ``prefer="true"``, else its first one (the PLS rule for synthesis); a word
listed by two lexemes speaks the first (words match without regard to case, as the lexicon
does). Each grapheme becomes one ``PronunciationRule``, which is also what ElevenLabs' JSON rules
become (``{"type": "alias"|"phoneme", "string_to_replace": ...}``, read by its transport).

Refused with a ``ValueError`` that says why: XML that is not well-formed, a DOCTYPE (so no entity
of any kind is ever expanded: no external files, no exponential expansion), a root other than
``lexicon``, an unknown alphabet, an empty grapheme or one with whitespace (a phrase: the lexicon
matches single words), a lexeme with no pronunciation, a pronunciation that cannot be spoken,
more than ``max_rules`` graphemes.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from voxflow.text.arpabet import to_ipa
from voxflow.text.lexicon import Lexicon, LexiconEntry

__all__ = [
    "ALPHABETS",
    "MAX_RULES",
    "PLS_NAMESPACE",
    "PronunciationRule",
    "TooManyRules",
    "alphabet_name",
    "lexicon_of",
    "parse_pls",
    "to_pls",
]

PLS_NAMESPACE = "http://www.w3.org/2005/01/pronunciation-lexicon"
MAX_RULES = 10_000
MAX_TEXT = 1000  # characters of one grapheme, alias or phoneme string
# Every spelling accepted -> the canonical name (ElevenLabs' rule names).
ALPHABETS = {"ipa": "ipa", "x-cmu": "cmu-arpabet", "cmu-arpabet": "cmu-arpabet"}
_DOCTYPE = re.compile(r"<!\s*(DOCTYPE|ENTITY)", re.IGNORECASE)


class TooManyRules(ValueError):
    """A lexicon over the number of graphemes the reader was allowed."""


def alphabet_name(raw: str) -> str:
    """The canonical name of a phoneme alphabet (``ipa`` or ``cmu-arpabet``)."""
    name = ALPHABETS.get(raw.strip().lower())
    if name is None:
        raise ValueError(f"unknown phoneme alphabet {raw[:40]!r}: use ipa, x-cmu or cmu-arpabet")
    return name


@dataclass(frozen=True)
class PronunciationRule:
    """How to say one written word: an alias, or phonemes in ``alphabet``. Checked when made:
    a rule that exists can be spoken."""

    grapheme: str
    alias: str | None = None
    phoneme: str | None = None
    alphabet: str = "ipa"  # of ``phoneme``: "ipa" or "cmu-arpabet"

    def __post_init__(self) -> None:
        if not self.grapheme or not self.grapheme.strip():
            raise ValueError("a grapheme (string_to_replace) must not be empty")
        if any(char.isspace() for char in self.grapheme):
            raise ValueError(
                f"{self.grapheme[:40]!r} holds whitespace: only single words can be replaced"
            )
        for value in (self.grapheme, self.alias, self.phoneme):
            if value is not None and len(value) > MAX_TEXT:
                raise ValueError(f"{value[:40]!r}... is longer than {MAX_TEXT} characters")
        if self.alphabet not in ("ipa", "cmu-arpabet"):
            raise ValueError(f"unknown phoneme alphabet {self.alphabet!r}")
        self.entry()  # raises what the lexicon refuses (empty, "[[", a line break)

    def entry(self) -> LexiconEntry:
        """The lexicon entry: the alias as a respelling, the phonemes in IPA."""
        if self.phoneme is None:
            return LexiconEntry(self.grapheme, respelling=self.alias)
        if self.alias is not None:
            raise ValueError(f"rule {self.grapheme!r} has both an alias and a phoneme")
        if self.alphabet == "cmu-arpabet":
            return LexiconEntry(self.grapheme, phonemes=to_ipa(self.phoneme))
        return LexiconEntry(self.grapheme, phonemes=self.phoneme.strip())


def lexicon_of(rules: Iterable[PronunciationRule]) -> Lexicon:
    """The rules as a lexicon, in order; of two rules for the same word, the first wins."""
    first: dict[str, LexiconEntry] = {}
    for rule in rules:
        first.setdefault(rule.grapheme.casefold(), rule.entry())
    return Lexicon(first.values())


def _local(tag: object) -> str:
    # "{namespace}name" -> "name"; comments and processing instructions have no str tag.
    return tag.rpartition("}")[2] if isinstance(tag, str) else ""


def _text(element: ET.Element) -> str:
    return "".join(element.itertext()).strip()


def parse_pls(document: bytes | str, max_rules: int = MAX_RULES) -> tuple[PronunciationRule, ...]:
    """The rules of a PLS document, in order, each word once (see the module docstring)."""
    if isinstance(document, bytes):
        try:
            # UTF-8 only, so that the DOCTYPE check below reads what the parser will read.
            text = document.decode("utf-8")
        except UnicodeDecodeError:
            raise ValueError("the lexicon is not UTF-8") from None
    else:
        text = document
    text = text.removeprefix("\ufeff")
    if _DOCTYPE.search(text) is not None:
        raise ValueError("a PLS lexicon may not have a DOCTYPE or entity declarations")
    try:
        root = ET.fromstring(text)
    except ET.ParseError as error:
        raise ValueError(f"the lexicon is not well-formed XML: {error}") from None
    if _local(root.tag) != "lexicon":
        raise ValueError(f"the root element must be <lexicon>, not <{_local(root.tag)}>")
    default_alphabet = alphabet_name(root.get("alphabet", "ipa"))
    rules: list[PronunciationRule] = []
    seen: set[str] = set()
    for number, lexeme in enumerate((e for e in root if _local(e.tag) == "lexeme"), start=1):
        graphemes = [_text(e) for e in lexeme if _local(e.tag) == "grapheme"]
        if not graphemes:
            raise ValueError(f"lexeme {number} has no <grapheme>")
        spoken = [e for e in lexeme if _local(e.tag) in ("alias", "phoneme")]
        preferred = [e for e in spoken if e.get("prefer") == "true"]
        if not spoken:
            raise ValueError(f"lexeme {number} ({graphemes[0][:40]!r}) has no <alias> or <phoneme>")
        chosen = (preferred or spoken)[0]
        value = _text(chosen)
        for grapheme in graphemes:
            try:
                if _local(chosen.tag) == "alias":
                    rule = PronunciationRule(grapheme, alias=value)
                else:
                    alphabet = chosen.get("alphabet")
                    rule = PronunciationRule(
                        grapheme,
                        phoneme=value,
                        alphabet=default_alphabet if alphabet is None else alphabet_name(alphabet),
                    )
            except ValueError as error:
                raise ValueError(f"lexeme {number}: {error}") from None
            if grapheme.casefold() in seen:
                continue
            seen.add(grapheme.casefold())
            rules.append(rule)
            if len(rules) > max_rules:
                raise TooManyRules(f"a lexicon may hold at most {max_rules} graphemes")
    return tuple(rules)


def to_pls(rules: Sequence[PronunciationRule]) -> str:
    """A PLS document of ``rules`` (one lexeme each), which ``parse_pls`` reads back as them."""
    root = ET.Element(
        "lexicon",
        {"version": "1.0", "xmlns": PLS_NAMESPACE, "alphabet": "ipa", "xml:lang": "en-US"},
    )
    for rule in rules:
        lexeme = ET.SubElement(root, "lexeme")
        ET.SubElement(lexeme, "grapheme").text = rule.grapheme
        if rule.phoneme is None:
            ET.SubElement(lexeme, "alias").text = rule.alias
        else:
            attributes = {} if rule.alphabet == "ipa" else {"alphabet": "x-cmu"}
            ET.SubElement(lexeme, "phoneme", attributes).text = rule.phoneme
    ET.indent(root)
    body = ET.tostring(root, encoding="unicode")
    return f'<?xml version="1.0" encoding="UTF-8"?>\n{body}\n'
