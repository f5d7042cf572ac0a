"""The phrase cache's memory tier and admission rule (runtime.cache.phrase_cache)."""

from __future__ import annotations

from tests.support.cached_phrases import flat_phrase
from voxflow.engines.base import VoiceSettings
from voxflow.engines.piper import PiperEngine
from voxflow.runtime.cache.phrase_cache import CacheSettings, PhraseCache, Tier


def test_a_phrase_is_kept_on_its_second_request_not_its_first() -> None:
    cache = PhraseCache(CacheSettings())
    first = cache.lookup("k")
    assert first.phrase is None and not first.admit
    second = cache.lookup("k")
    assert second.phrase is None and second.admit
    cache.store("k", flat_phrase(10))
    third = cache.lookup("k")
    assert third.phrase is not None and third.tier is Tier.MEMORY
    stats = cache.stats()
    assert (stats.hits[Tier.MEMORY], stats.misses, stats.stored, stats.entries) == (1, 2, 1, 1)


def test_a_forced_lookup_admits_at_once() -> None:
    cache = PhraseCache(CacheSettings())
    assert cache.lookup("k", force=True).admit


def test_the_seen_list_is_bounded() -> None:
    cache = PhraseCache(CacheSettings(seen_keys=2))
    for key in ("a", "b", "c"):
        cache.lookup(key)
    assert not cache.lookup("a").admit  # pushed out by c: a first request again
    assert cache.lookup("c").admit


def test_memory_keeps_its_byte_budget_least_recently_used_out_first() -> None:
    size = flat_phrase(10).nbytes
    cache = PhraseCache(CacheSettings(memory_bytes=3 * size))
    for key in ("a", "b", "c"):
        cache.store(key, flat_phrase(10))
    assert cache.lookup("a").phrase is not None  # a is now the most recently used
    cache.store("d", flat_phrase(10))
    assert cache.contains("a") and not cache.contains("b")
    assert cache.contains("c") and cache.contains("d")
    stats = cache.stats()
    assert stats.evictions == 1 and stats.bytes == 3 * size and stats.entries == 3


def test_a_phrase_over_the_size_cap_is_not_kept() -> None:
    cache = PhraseCache(CacheSettings(max_phrase_bytes=flat_phrase(10).nbytes - 1))
    cache.store("k", flat_phrase(10))
    assert not cache.contains("k") and cache.stats().stored == 0


def test_storing_a_key_again_replaces_it_and_counts_its_bytes_once() -> None:
    cache = PhraseCache(CacheSettings())
    cache.store("k", flat_phrase(10))
    cache.store("k", flat_phrase(20))
    phrase = cache.lookup("k").phrase
    assert phrase is not None and phrase.utterance.num_frames == 20
    assert cache.stats().bytes == flat_phrase(20).nbytes


def test_keys_come_from_the_engines_voice_files(engine: PiperEngine) -> None:
    cache = PhraseCache(CacheSettings())
    key = cache.key(engine, "Hello.", "joe", VoiceSettings(seed=1))
    assert key == cache.key(engine, "Hello.", "joe", VoiceSettings(seed=1))
    assert key != cache.key(engine, "Hello.", "joe", VoiceSettings(seed=2))
