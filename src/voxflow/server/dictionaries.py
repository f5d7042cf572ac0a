"""Pronunciation dictionaries kept in a directory (``--dictionaries-dir``).

Layout, one directory per owner and one per dictionary::

    <root>/<owner>/<dictionary id>/dictionary.json        name, description, creation time
    <root>/<owner>/<dictionary id>/<ns>-<version id>-<n>.pls   one version: n rules, as PLS

``<owner>`` is ``shared`` without API keys, else ``key-`` and the key's owner name
(``server.security``: a digest, never the key). Nothing is ever rewritten: a version is a new
file, and a dictionary exists once its ``dictionary.json`` does (written after its first
version), each written to a temporary name and renamed into place. So replicas that share the
directory (a network volume) see each other's dictionaries at once and cannot lose one another's
versions; the latest version is the one whose name sorts last (its creation time in ns). The
count limits are checked against what the directory holds, so replicas creating at the same
moment may pass them by one each.

Versions are immutable, so their rules and lexicons are kept in a small cache. Which version is
a dictionary's latest is read from the directory at most once per ``LATEST_FRESH_S`` for the
requests that name no version (they look it up on the event loop); a change made through this
replica is seen at once, one made through another within that time. Listings read the directory
each time.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path

from voxflow.session.dictionaries import DictionaryInfo, DictionaryLimits, VersionInfo
from voxflow.session.errors import SessionError
from voxflow.text.lexicon import Lexicon
from voxflow.text.pls import PronunciationRule, lexicon_of, parse_pls, to_pls

__all__ = ["DirectoryDictionaryStore"]

_ID = re.compile(r"[A-Za-z0-9]{1,64}")
_OWNER = re.compile(r"[0-9a-f]{1,64}")
_VERSION_FILE = re.compile(r"(\d{20})-([A-Za-z0-9]+)-(\d+)\.pls")
_META = "dictionary.json"
CACHED_VERSIONS = 256
LATEST_FRESH_S = 1.0
_Cached = tuple[tuple[PronunciationRule, ...], Lexicon]  # a version's rules and lexicon


def _new_id() -> str:
    # ElevenLabs' ids are 20 alphanumeric characters; so are these.
    return secrets.token_hex(10)


def _write_new(path: Path, text: str) -> None:
    """``text`` at ``path``, all of it or nothing: a reader never sees half a file."""
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)


class DirectoryDictionaryStore:
    """A ``session.dictionaries.DictionaryStore`` in a directory (see the module docstring)."""

    def __init__(
        self,
        root: Path,
        limits: DictionaryLimits | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        root.mkdir(parents=True, exist_ok=True)
        self._root = root
        self._limits = limits or DictionaryLimits()
        self._clock = clock
        self._lock = threading.Lock()
        self._cache: OrderedDict[tuple[str, str, str], _Cached] = OrderedDict()
        # (owner, dictionary id) -> its latest version id, and when that was read.
        self._latest: dict[tuple[str, str], tuple[str, float]] = {}

    @property
    def limits(self) -> DictionaryLimits:
        return self._limits

    # -- paths -----------------------------------------------------------------------------------

    def _owner_dir(self, owner: str) -> Path:
        if owner == "":
            return self._root / "shared"
        if _OWNER.fullmatch(owner) is None:
            raise ValueError(f"not an owner name: {owner!r}")
        return self._root / f"key-{owner}"

    def _dictionary_dir(self, owner: str, dictionary_id: str) -> Path:
        # Checked before it names a path: an id is never "..", a slash or anything else.
        if _ID.fullmatch(dictionary_id) is None:
            raise SessionError(
                "unknown_dictionary", f"no pronunciation dictionary {dictionary_id[:80]!r}"
            )
        return self._owner_dir(owner) / dictionary_id

    # -- reading ---------------------------------------------------------------------------------

    def _versions(self, directory: Path) -> list[tuple[VersionInfo, Path]]:
        found = []
        for path in directory.iterdir():
            match = _VERSION_FILE.fullmatch(path.name)
            if match is not None:
                created = int(match.group(1)) / 1e9
                found.append((VersionInfo(match.group(2), created, int(match.group(3))), path))
        found.sort(key=lambda item: item[1].name)
        return found

    def _info(self, owner: str, directory: Path) -> DictionaryInfo | None:
        try:
            meta = json.loads((directory / _META).read_text(encoding="utf-8"))
            versions = self._versions(directory)
        except FileNotFoundError:
            return None  # being created, or not a dictionary
        if not versions:
            return None
        return DictionaryInfo(
            dictionary_id=directory.name,
            name=meta["name"],
            description=meta.get("description"),
            owner=owner,
            created_unix=meta["created_unix"],
            versions=tuple(version for version, _ in versions),
        )

    def get(self, owner: str, dictionary_id: str) -> DictionaryInfo:
        info = self._info(owner, self._dictionary_dir(owner, dictionary_id))
        if info is None:
            raise SessionError(
                "unknown_dictionary", f"no pronunciation dictionary {dictionary_id!r}"
            )
        return info

    def list(self, owner: str) -> list[DictionaryInfo]:
        directory = self._owner_dir(owner)
        if not directory.is_dir():
            return []
        infos = [self._info(owner, child) for child in directory.iterdir() if child.is_dir()]
        found = [info for info in infos if info is not None]
        found.sort(key=lambda info: (info.created_unix, info.dictionary_id))
        return found

    def _version(self, owner: str, dictionary_id: str, version_id: str | None) -> _Cached:
        directory = self._dictionary_dir(owner, dictionary_id)
        if version_id is None:
            with self._lock:
                latest = self._latest.get((owner, dictionary_id))
            if latest is not None and self._clock() - latest[1] < LATEST_FRESH_S:
                version_id = latest[0]
        if version_id is not None:
            with self._lock:
                cached = self._cache.get((owner, dictionary_id, version_id))
                if cached is not None:
                    self._cache.move_to_end((owner, dictionary_id, version_id))
                    return cached
        try:
            listed = self._versions(directory) if (directory / _META).is_file() else []
        except FileNotFoundError:
            listed = []
        if not listed:  # as ``get``: no dictionary until its first version and metadata exist
            raise SessionError(
                "unknown_dictionary", f"no pronunciation dictionary {dictionary_id!r}"
            )
        versions = {version.version_id: path for version, path in listed}
        wanted = listed[-1][0].version_id if version_id is None else version_id
        if version_id is None:
            with self._lock:
                self._latest[(owner, dictionary_id)] = (wanted, self._clock())
        path = versions.get(wanted)
        if path is None:
            raise SessionError(
                "unknown_dictionary",
                f"pronunciation dictionary {dictionary_id!r} has no version {wanted[:80]!r}",
            )
        key = (owner, dictionary_id, wanted)
        with self._lock:
            cached = self._cache.get(key)
        if cached is not None:
            return cached
        rules = parse_pls(path.read_bytes(), max_rules=self._limits.max_rules)
        entry = (rules, lexicon_of(rules))
        with self._lock:
            self._cache[key] = entry
            while len(self._cache) > CACHED_VERSIONS:
                self._cache.popitem(last=False)
        return entry

    def rules(
        self, owner: str, dictionary_id: str, version_id: str | None
    ) -> tuple[PronunciationRule, ...]:
        return self._version(owner, dictionary_id, version_id)[0]

    def lexicon(self, owner: str, dictionary_id: str, version_id: str | None) -> Lexicon:
        return self._version(owner, dictionary_id, version_id)[1]

    # -- writing ---------------------------------------------------------------------------------

    def _check_rules(self, rules: Sequence[PronunciationRule]) -> None:
        if len(rules) > self._limits.max_rules:
            raise SessionError(
                "dictionary_limit",
                f"a pronunciation dictionary holds at most {self._limits.max_rules} rules",
            )

    def _write_version(self, directory: Path, rules: Sequence[PronunciationRule]) -> str:
        version_id = _new_id()
        name = f"{time.time_ns():020d}-{version_id}-{len(rules)}.pls"
        _write_new(directory / name, to_pls(rules))
        return version_id

    def create(
        self,
        owner: str,
        name: str,
        description: str | None,
        rules: Sequence[PronunciationRule],
    ) -> DictionaryInfo:
        limit = self._limits.max_name_chars
        if not name.strip() or len(name) > limit:
            raise SessionError(
                "invalid_dictionary", f"a dictionary name must have 1 to {limit} characters"
            )
        if description is not None and len(description) > limit:
            raise SessionError(
                "invalid_dictionary", f"a dictionary description has at most {limit} characters"
            )
        self._check_rules(rules)
        if len(self.list(owner)) >= self._limits.max_dictionaries:
            raise SessionError(
                "dictionary_limit",
                f"at most {self._limits.max_dictionaries} pronunciation dictionaries per API key",
            )
        dictionary_id = _new_id()
        directory = self._dictionary_dir(owner, dictionary_id)
        directory.mkdir(parents=True)
        self._write_version(directory, rules)
        meta = {"name": name, "description": description, "created_unix": time.time()}
        _write_new(directory / _META, json.dumps(meta, ensure_ascii=False))
        return self.get(owner, dictionary_id)

    def add_version(
        self, owner: str, dictionary_id: str, rules: Sequence[PronunciationRule]
    ) -> DictionaryInfo:
        info = self.get(owner, dictionary_id)
        self._check_rules(rules)
        if len(info.versions) >= self._limits.max_versions:
            raise SessionError(
                "dictionary_limit",
                f"a pronunciation dictionary keeps at most {self._limits.max_versions} versions",
            )
        self._write_version(self._dictionary_dir(owner, dictionary_id), rules)
        with self._lock:
            self._latest.pop((owner, dictionary_id), None)
        return self.get(owner, dictionary_id)
