"""The phrase cache's shared tier (runtime.cache.redis_tier) on a real Redis: shared hits between
replicas, and Redis down, slow or holding garbage is a miss, never an error."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
import redis as redis_client

from tests.support.cached_phrases import flat_phrase
from tests.support.redis_server import RedisServer, redis_server
from voxflow.runtime.cache.phrase_cache import CacheSettings, PhraseCache, Tier
from voxflow.runtime.cache.redis_tier import RedisTier, RedisTierSettings


@pytest.fixture
def redis(tmp_path: Path) -> Iterator[RedisServer]:
    with redis_server(tmp_path) as server:
        yield server


def _tier(redis: RedisServer, retry_s: float = 0.2) -> RedisTier:
    return RedisTier(RedisTierSettings(redis.url, ttl_s=60, timeout_s=0.2, retry_s=retry_s))


def test_a_phrase_one_replica_kept_is_a_shared_hit_on_another(redis: RedisServer) -> None:
    one, other = (
        PhraseCache(CacheSettings(), _tier(redis)),
        PhraseCache(CacheSettings(), _tier(redis)),
    )
    try:
        phrase = flat_phrase(12, 0.25)
        one.store("k", phrase)
        one.close()  # the writer thread writes what is queued first
        found = other.lookup("k")
        assert found.tier is Tier.SHARED and found.phrase is not None
        assert np.array_equal(found.phrase.audio, phrase.audio)
        again = other.lookup("k")
        assert again.tier is Tier.MEMORY  # the replica kept it
        assert other.stats().hits == {Tier.MEMORY: 1, Tier.SHARED: 1}
    finally:
        other.close()


def test_redis_going_away_is_a_miss_and_it_comes_back_by_itself(
    redis: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="voxflow.runtime.cache.redis_tier")
    tier = _tier(redis, retry_s=0.2)
    cache = PhraseCache(CacheSettings(), tier)
    try:
        cache.store("k", flat_phrase(8))
        _wait(lambda: tier.stats().writes == 1)
        redis.stop()
        for key in ("a", "b", "c"):
            assert cache.lookup(key).phrase is None  # a miss, not an error
        stats = tier.stats()
        assert not stats.available and stats.errors >= 1
        down = [r for r in caplog.records if "unavailable" in r.getMessage()]
        assert len(down) == 1  # logged once, not per lookup
        assert "127.0.0.1" in down[0].getMessage()
        redis.start()  # empty: nothing is saved to disk
        _wait(lambda: cache.lookup("again").phrase is None and tier.stats().available)
        assert any("is back" in r.getMessage() for r in caplog.records)
        cache.store("k2", flat_phrase(8, 0.5))
        _wait(lambda: tier.stats().writes == 2)
    finally:
        cache.close()


def test_an_entry_that_is_not_a_phrase_is_a_miss(redis: RedisServer) -> None:
    client = redis_client.Redis.from_url(redis.url)
    try:
        client.set("voxflow:phrase:k", b"garbage")
    finally:
        client.close()
    tier = _tier(redis)
    try:
        assert tier.get("k") is None
        assert tier.stats().errors == 1 and tier.stats().available
    finally:
        tier.close()


def _wait(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.05)


def test_a_slow_redis_is_a_miss_within_its_timeout(redis: RedisServer) -> None:
    tier = _tier(redis, retry_s=5.0)  # a 0.2 s timeout
    cache = PhraseCache(CacheSettings(), tier)
    sleeper = redis_client.Redis.from_url(redis.url)
    stall = threading.Thread(target=lambda: sleeper.execute_command("DEBUG", "SLEEP", "2"))
    try:
        stall.start()
        time.sleep(0.2)  # Redis is asleep now
        started = time.monotonic()
        assert cache.lookup("k").phrase is None
        first = time.monotonic() - started
        started = time.monotonic()
        assert cache.lookup("other").phrase is None
        second = time.monotonic() - started
        # The first lookup waited for its timeout, not for Redis; the next one does not wait
        # at all while Redis is left alone (Redis sleeps 2 s: both came back before it woke).
        assert first < 1.5 and second < first
        assert stall.is_alive()
        assert not tier.stats().available and tier.stats().errors == 1
    finally:
        stall.join()
        sleeper.close()
        cache.close()
