"""A scheduler with a phrase cache, on the real engine counting its calls."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.counting_engine import CountingEngine
from voxflow.engines.piper import PiperEngine
from voxflow.runtime.cache.phrase_cache import CacheSettings, PhraseCache
from voxflow.runtime.scheduler import Scheduler
from voxflow.runtime.scheduler_settings import SchedulerSettings


@pytest.fixture
def counting(engine: PiperEngine) -> CountingEngine:
    return CountingEngine(engine)


@pytest.fixture
def cache() -> PhraseCache:
    return PhraseCache(CacheSettings())


@pytest.fixture
def scheduler(counting: CountingEngine, cache: PhraseCache) -> Iterator[Scheduler]:
    scheduler = Scheduler(counting, SchedulerSettings(workers=2), cache=cache)
    yield scheduler
    scheduler.shutdown()
