"""The fixtures the product's tests and the benchmarks' tests share: the real bundled voice and
the real Kokoro engine, loaded once per test session, and a real server. Each suite's conftest
imports them."""

from __future__ import annotations

import contextlib
import gc
import os
from collections.abc import Callable, Iterator

import pytest
import uvicorn

from tests.support.servers import TEST_MAX_STREAMS, free_port, running_server, serving
from voxflow.config import ServerSettings
from voxflow.engines.kokoro import model as kokoro_model
from voxflow.engines.kokoro.engine import KokoroEngine, KokoroSettings
from voxflow.engines.kokoro.voices import default_voices_dir, find_packs
from voxflow.engines.piper import EngineSettings, PiperEngine
from voxflow.engines.registry import VoiceRegistry
from voxflow.engines.router import EngineRouter
from voxflow.engines.split_cache import SplitCache

# What each suite's conftest takes in (``from tests.support.fixtures import *``).
__all__ = [
    "engine",
    "kokoro_engine",
    "kokoro_registry",
    "live_server",
    "pytest_collection_finish",
    "registry",
    "served_engine",
    "server_factory",
    "server_url",
    "split_cache",
]


def pytest_collection_finish(session: pytest.Session) -> None:
    """What collection made (every test module, its items, hypothesis' strategies) lives until
    the session ends: out of the garbage collector's walks, which hypothesis' millions of
    short-lived objects trigger again and again (a quarter of the collector's time went on it)."""
    gc.freeze()


@pytest.fixture(scope="session")
def registry() -> VoiceRegistry:
    return VoiceRegistry()


@pytest.fixture(scope="session")
def split_cache() -> SplitCache | None:
    """Where the servers the tests start keep the cut and optimized models (``make unit`` puts
    it in the venv): the session's engines share it."""
    return SplitCache.from_env(os.environ)


@pytest.fixture(scope="session")
def engine(registry: VoiceRegistry, split_cache: SplitCache | None) -> PiperEngine:
    engine = PiperEngine(registry, EngineSettings(split_cache=split_cache))
    engine.load("joe")
    return engine


@pytest.fixture(scope="session")
def served_engine(registry: VoiceRegistry, engine: PiperEngine) -> EngineRouter:
    """The engine the test servers serve the bundled voice with (``create_app``'s ``engine``):
    the session's, as ``build_engine(registry)`` makes it, so that the voice is loaded once a
    worker rather than once a server (a quarter of a second of CPU each)."""
    return EngineRouter(registry, {"piper": engine})


@pytest.fixture(scope="session")
def kokoro_registry() -> VoiceRegistry:
    """Piper's voices and the Kokoro packs ``make kokoro-voices`` installed (``make unit``
    installs them: their absence is a failure, not a skip)."""
    voices = default_voices_dir()
    assert find_packs(voices), f"no Kokoro voices in {voices}: make kokoro-voices (make unit does)"
    assert kokoro_model.available(), kokoro_model.INSTALL_HINT
    return VoiceRegistry(kokoro_dir=voices)


@pytest.fixture(scope="session")
def kokoro_engine(kokoro_registry: VoiceRegistry, split_cache: SplitCache | None) -> KokoroEngine:
    """The Kokoro engine with ``kokoro:af_heart`` loaded (the model split: a few seconds, once)."""
    # Both cores for every job (one set of sessions): the tests render whole sentences on the
    # test's thread, and results do not depend on the thread count.
    settings = KokoroSettings(intra_op_threads=2, wide_threads=2, split_cache=split_cache)
    engine = KokoroEngine(kokoro_registry, settings)
    engine.load("kokoro:af_heart")
    return engine


@pytest.fixture(scope="session")
def live_server(served_engine: EngineRouter) -> Iterator[uvicorn.Server]:
    """The session's shared server (``server_url`` is its address)."""
    # No cost limit: its tests open several streams at once to test the protocols, and how
    # many a cold server admits at once is learnt on the machine (docs/operations.md,
    # *Admission control*); tests/server/test_app.py and tests/reliability/ test admission.
    settings = ServerSettings(
        port=free_port(), workers=2, max_streams=TEST_MAX_STREAMS, max_load=0.0
    )
    with serving(settings, served_engine) as server:
        yield server


@pytest.fixture(scope="session")
def server_url(live_server: uvicorn.Server) -> str:
    return f"http://127.0.0.1:{live_server.config.port}"


@pytest.fixture
def server_factory(
    served_engine: EngineRouter,
) -> Callable[..., contextlib.AbstractContextManager[str]]:
    """Start a dedicated server with non-default settings (one per test); with the session's
    engine unless the settings name voices of their own."""

    def start(**fields: object) -> contextlib.AbstractContextManager[str]:
        fields.setdefault("max_streams", TEST_MAX_STREAMS)
        # Admission by cost is learnt from the machine's slack, which a busy test machine takes
        # away: the tests of admission set it; the others are not refused for the tests beside.
        fields.setdefault("max_load", 0.0)
        settings = ServerSettings(port=free_port(), **fields)  # type: ignore[arg-type]
        return running_server(settings, None if settings.voice_sources() else served_engine)

    return start
