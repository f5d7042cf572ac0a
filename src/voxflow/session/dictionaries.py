"""Pronunciation dictionaries as a resource: what one is, what a store of them does, and how a
request's locators become its lexicon (no I/O).

A dictionary has an id, a name, a creation time and versions; each version is an immutable list
of ``PronunciationRule``s, and every change (a new dictionary, rules added or removed) makes a new
version with an id of its own, as ElevenLabs' dictionaries do. Dictionaries belong to an owner:
with API keys configured, the key a request carried (``server.security`` names it), so a key
never sees another key's dictionaries; without keys, everyone shares one owner, ``""``.

The composition root builds the store (``server/dictionaries.py`` keeps it in a directory);
transports reach it through the ``Gateway`` and answer in their own shapes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from voxflow.session.errors import SessionError
from voxflow.text.lexicon import Lexicon
from voxflow.text.pls import MAX_RULES, PronunciationRule

__all__ = [
    "MAX_LOCATORS",
    "Dictionaries",
    "DictionaryInfo",
    "DictionaryLimits",
    "DictionaryStore",
    "Locator",
    "VersionInfo",
    "locators_lexicon",
    "no_dictionaries",
    "parse_locators",
    "require_store",
]

MAX_LOCATORS = 3  # ElevenLabs' limit of dictionaries per request


@dataclass(frozen=True)
class DictionaryLimits:
    max_dictionaries: int = 100  # per owner
    max_rules: int = MAX_RULES  # per version
    max_versions: int = 100  # per dictionary
    max_name_chars: int = 200  # name and description each


@dataclass(frozen=True)
class VersionInfo:
    version_id: str
    created_unix: float
    rules: int  # how many


@dataclass(frozen=True)
class DictionaryInfo:
    dictionary_id: str
    name: str
    description: str | None
    owner: str
    created_unix: float
    versions: tuple[VersionInfo, ...]  # oldest first; never empty

    @property
    def latest(self) -> VersionInfo:
        return self.versions[-1]


@dataclass(frozen=True)
class Locator:
    """One dictionary a request names, at a version (None: its latest)."""

    dictionary_id: str
    version_id: str | None = None


class DictionaryStore(Protocol):
    """Dictionaries by owner. Every method raises ``SessionError``: ``unknown_dictionary`` for
    an id (or version) the owner does not have, ``invalid_dictionary`` for bad input,
    ``dictionary_limit`` past a limit."""

    @property
    def limits(self) -> DictionaryLimits: ...

    def create(
        self,
        owner: str,
        name: str,
        description: str | None,
        rules: Sequence[PronunciationRule],
    ) -> DictionaryInfo: ...

    def add_version(
        self, owner: str, dictionary_id: str, rules: Sequence[PronunciationRule]
    ) -> DictionaryInfo:
        """A new latest version holding ``rules`` (all of them: versions are whole)."""
        ...

    def get(self, owner: str, dictionary_id: str) -> DictionaryInfo: ...

    def list(self, owner: str) -> list[DictionaryInfo]:
        """The owner's dictionaries, oldest first."""
        ...

    def rules(
        self, owner: str, dictionary_id: str, version_id: str | None
    ) -> tuple[PronunciationRule, ...]:
        """A version's rules (None: the latest version's)."""
        ...

    def lexicon(self, owner: str, dictionary_id: str, version_id: str | None) -> Lexicon:
        """A version's rules as a lexicon (None: the latest version)."""
        ...


# What a protocol asks of the server's dictionaries: the lexicon of a request's locators (None
# for none), for the connection's owner; ``SessionError`` for an unknown one.
Dictionaries = Callable[[Sequence[Locator]], Lexicon | None]


def no_dictionaries(locators: Sequence[Locator]) -> Lexicon | None:
    """The dictionaries of a protocol built without a store (its unit tests): none."""
    return locators_lexicon(None, "", locators)


def require_store(store: DictionaryStore | None) -> DictionaryStore:
    """``store``, or ``dictionaries_disabled`` for a server that keeps none."""
    if store is None:
        raise SessionError(
            "dictionaries_disabled",
            "this server keeps no pronunciation dictionaries (start it with --dictionaries-dir)",
        )
    return store


def locators_lexicon(
    store: DictionaryStore | None, owner: str, locators: Sequence[Locator]
) -> Lexicon | None:
    """The lexicon of a request's dictionaries, applied in order: where two name the same word,
    the first one listed wins (as rewriting the text with each in turn would have it). None for
    no locators."""
    if not locators:
        return None
    if len(locators) > MAX_LOCATORS:
        raise SessionError(
            "invalid_request",
            f"at most {MAX_LOCATORS} pronunciation dictionary locators per request",
        )
    store = require_store(store)
    lexicons = [store.lexicon(owner, one.dictionary_id, one.version_id) for one in locators]
    merged = lexicons[-1]
    for earlier in reversed(lexicons[:-1]):
        merged = merged.merged(earlier)
    return merged


def parse_locators(raw: object, code: str = "invalid_request") -> tuple[Locator, ...]:
    """``pronunciation_dictionary_locators``: a list of ``{"pronunciation_dictionary_id",
    "version_id"}`` (``version_id`` optional: the latest); absent or null is none. Refused with
    ``code`` (the protocol's name for a bad request or message)."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise SessionError(code, "pronunciation_dictionary_locators must be a list")
    locators = []
    for number, item in enumerate(raw):
        where = f"pronunciation_dictionary_locators[{number}]"
        if not isinstance(item, dict) or not isinstance(
            item.get("pronunciation_dictionary_id"), str
        ):
            raise SessionError(
                code, f"{where} must be an object with a pronunciation_dictionary_id"
            )
        version = item.get("version_id")
        if version is not None and not isinstance(version, str):
            raise SessionError(code, f"{where}.version_id must be a string")
        locators.append(Locator(item["pronunciation_dictionary_id"], version))
    return tuple(locators)
