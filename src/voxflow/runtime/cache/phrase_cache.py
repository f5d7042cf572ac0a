"""The phrase cache: rendered engine requests kept for the next time they are asked for.

Two tiers. The memory tier is an LRU with a byte budget in this process. The shared tier
(optional, ``voxflow.runtime.cache.redis_tier``) is seen by every replica: a phrase one replica
rendered is a hit on the others, which then keep it in memory too. A shared tier that is down or
slow is a miss, never an error (the tier itself bounds its wait and reports its failures).

What is worth keeping (the *admission* rule): a phrase asked for the second time (keys seen once
wait in a bounded list of their own), or one warmed or prefetched (``force``). A phrase seen once
is not kept: most of a reply is said once, and keeping it would push out what is said again.

The scheduler calls ``lookup`` on its worker threads, before an engine request's text stage, and
``store`` once the request's audio is whole (``voxflow.runtime.cache.recording``). Everything here
is thread-safe and quick, apart from the shared tier's bounded wait in ``lookup``.
"""

from __future__ import annotations

import enum
import logging
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Protocol

from voxflow.engines.base import Engine, VoiceSettings
from voxflow.runtime.cache.phrases import CachedPhrase, ModelFingerprints, phrase_key

__all__ = ["CacheSettings", "CacheStats", "Lookup", "PhraseCache", "SharedTier", "Tier"]

log = logging.getLogger(__name__)


class Tier(enum.Enum):
    """Where a lookup found its phrase."""

    MEMORY = "memory"
    SHARED = "shared"


class SharedTier(Protocol):
    """A cache every replica sees. Neither call raises: a failure is a miss (or a lost write)
    that the tier counts and logs itself."""

    def get(self, key: str) -> CachedPhrase | None: ...

    def put(self, key: str, phrase: CachedPhrase) -> None: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class CacheSettings:
    memory_bytes: int = 64 * 1024 * 1024  # about 6 minutes of audio at 22,050 Hz
    # Keys seen once, remembered so that their second request is kept (memory: ~100 B each).
    seen_keys: int = 8192
    # Longer phrases are not kept: a cache serves what is said again, which is short, and one
    # long reply must not push out many short phrases.
    max_phrase_bytes: int = 2 * 1024 * 1024

    def __post_init__(self) -> None:
        if self.memory_bytes < 0 or self.seen_keys < 0 or self.max_phrase_bytes < 0:
            raise ValueError("cache sizes must be >= 0")


@dataclass(frozen=True)
class CacheStats:
    hits: dict[Tier, int]
    misses: int
    stored: int
    evictions: int
    bytes: int
    entries: int


@dataclass(frozen=True)
class Lookup:
    """The result of ``PhraseCache.lookup``: a phrase and where it was found, or a miss and
    whether its rendering is to be kept (``admit``)."""

    key: str
    phrase: CachedPhrase | None
    tier: Tier | None
    admit: bool


class PhraseCache:
    """See the module docstring."""

    def __init__(
        self,
        settings: CacheSettings,
        shared: SharedTier | None = None,
        fingerprints: ModelFingerprints | None = None,
    ) -> None:
        self._settings = settings
        self._shared = shared
        self._fingerprints = fingerprints or ModelFingerprints()
        self._lock = threading.Lock()
        self._entries: OrderedDict[str, CachedPhrase] = OrderedDict()
        self._seen: OrderedDict[str, None] = OrderedDict()
        self._bytes = 0
        self._hits = dict.fromkeys(Tier, 0)
        self._misses = 0
        self._stored = 0
        self._evictions = 0

    @property
    def shared(self) -> SharedTier | None:
        return self._shared

    def key(
        self,
        engine: Engine,
        text: str,
        voice: str,
        settings: VoiceSettings,
        lookahead: str = "",
    ) -> str:
        """The key of ``engine``'s rendering of ``text``, its text stage reading on into
        ``lookahead`` (hashes the voice's files once)."""
        key = self._key(engine, text, voice, settings, lookahead, hash_files=True)
        assert key is not None
        return key

    def _key(
        self,
        engine: Engine,
        text: str,
        voice: str,
        settings: VoiceSettings,
        lookahead: str,
        hash_files: bool,
    ) -> str | None:
        """The key; None, without ``hash_files``, for a voice whose files were never hashed."""
        info = engine.voice_info(voice)
        paths = (info.model_path, info.config_path)
        fingerprint = (
            self._fingerprints.of(*paths) if hash_files else self._fingerprints.known(*paths)
        )
        if fingerprint is None:
            return None
        return phrase_key(info.engine, fingerprint, text, info.name, settings, lookahead)

    def memory_hit(
        self,
        engine: Engine,
        text: str,
        voice: str,
        settings: VoiceSettings,
        lookahead: str = "",
    ) -> CachedPhrase | None:
        """The phrase if memory holds it, counted as a hit; None otherwise, counted as
        nothing (the full ``lookup`` follows). Quick enough for any thread: it reads no file
        (a voice whose model was never hashed is None) and never asks the shared tier."""
        key = self._key(engine, text, voice, settings, lookahead, hash_files=False)
        if key is None:
            return None
        with self._lock:
            return self._from_memory(key)

    def lookup(self, key: str, force: bool = False) -> Lookup:
        """The phrase under ``key``: from memory, else from the shared tier (then kept in
        memory). On a miss, ``admit`` says whether to keep the rendering: ``force``, or the
        key's second request."""
        with self._lock:
            phrase = self._from_memory(key)
            if phrase is not None:
                return Lookup(key, phrase, Tier.MEMORY, admit=False)
        phrase = None if self._shared is None else self._shared.get(key)
        with self._lock:
            if phrase is not None:
                self._hits[Tier.SHARED] += 1
                self._keep(key, phrase)
                return Lookup(key, phrase, Tier.SHARED, admit=False)
            self._misses += 1
            admit = force or key in self._seen
            if admit:
                self._seen.pop(key, None)
            elif self._settings.seen_keys:
                self._seen[key] = None
                if len(self._seen) > self._settings.seen_keys:
                    self._seen.popitem(last=False)
            return Lookup(key, None, None, admit)

    def contains(self, key: str) -> bool:
        """Whether memory holds ``key`` (counts nothing, moves nothing)."""
        with self._lock:
            return key in self._entries

    def store(self, key: str, phrase: CachedPhrase) -> None:
        """Keep a phrase whose rendering was admitted: in memory, and in the shared tier."""
        with self._lock:
            kept = self._keep(key, phrase)
            if kept:
                self._stored += 1
        if kept and self._shared is not None:
            self._shared.put(key, phrase)

    def stats(self) -> CacheStats:
        with self._lock:
            return CacheStats(
                dict(self._hits),
                self._misses,
                self._stored,
                self._evictions,
                self._bytes,
                len(self._entries),
            )

    def close(self) -> None:
        if self._shared is not None:
            self._shared.close()

    def _from_memory(self, key: str) -> CachedPhrase | None:
        """The phrase in memory under ``key``, counted as a hit and made the most recently used
        (lock held)."""
        phrase = self._entries.get(key)
        if phrase is not None:
            self._entries.move_to_end(key)
            self._hits[Tier.MEMORY] += 1
        return phrase

    def _keep(self, key: str, phrase: CachedPhrase) -> bool:
        """Put ``phrase`` in memory, evicting the least recently used (lock held)."""
        size = phrase.nbytes
        if size > min(self._settings.max_phrase_bytes, self._settings.memory_bytes):
            return False
        old = self._entries.pop(key, None)
        if old is not None:
            self._bytes -= old.nbytes
        self._entries[key] = phrase
        self._bytes += size
        while self._bytes > self._settings.memory_bytes:
            _, evicted = self._entries.popitem(last=False)
            self._bytes -= evicted.nbytes
            self._evictions += 1
        return True
