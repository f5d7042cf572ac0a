"""Shared fixtures: the real bundled voice and the real Kokoro engine, loaded once per test
session."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable, Iterator

import pytest
import uvicorn

from voxflow.config import ServerSettings
from voxflow.engines import kokoro_model
from voxflow.engines.kokoro import KokoroEngine, KokoroSettings
from voxflow.engines.kokoro_voices import default_voices_dir, find_packs
from voxflow.engines.piper import EngineSettings, PiperEngine
from voxflow.engines.registry import VoiceRegistry
from voxflow.server.app import create_app
from voxflow.server.uvicorn_config import uvicorn_config


@pytest.fixture(scope="session")
def registry() -> VoiceRegistry:
    return VoiceRegistry()


@pytest.fixture(scope="session")
def engine(registry: VoiceRegistry) -> PiperEngine:
    engine = PiperEngine(registry, EngineSettings())
    engine.load("joe")
    return engine


@pytest.fixture(scope="session")
def kokoro_registry() -> VoiceRegistry:
    """Piper's voices and the Kokoro packs ``make kokoro-voices`` installed (``make unit``
    installs them: their absence is a failure, not a skip)."""
    voices = default_voices_dir()
    assert find_packs(voices), f"no Kokoro voices in {voices}: make kokoro-voices (make unit does)"
    assert kokoro_model.available(), kokoro_model.INSTALL_HINT
    return VoiceRegistry(kokoro_dir=voices)


@pytest.fixture(scope="session")
def kokoro_engine(kokoro_registry: VoiceRegistry) -> KokoroEngine:
    """The Kokoro engine with ``kokoro:af_heart`` loaded (the model split: a few seconds, once)."""
    # Both cores for every job (one set of sessions): the tests render whole sentences on the
    # test's thread, and results do not depend on the thread count.
    engine = KokoroEngine(kokoro_registry, KokoroSettings(intra_op_threads=2, wide_threads=2))
    engine.load("kokoro:af_heart")
    return engine


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def serving(settings: ServerSettings, join_s: float = 15.0) -> Iterator[uvicorn.Server]:
    """A real uvicorn server with the app, in a thread of this process, as in production;
    yields the started server (its app is ``server.config.app``)."""
    # As ``voxflow serve`` configures it (the protocol with its limits, WebSocket sizes).
    config = uvicorn_config(create_app(settings), settings, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="test-uvicorn", daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("test server did not start")
        time.sleep(0.02)
    try:
        yield server
    finally:
        server.should_exit = True
        thread.join(join_s)
        assert not thread.is_alive(), "the test server did not stop"


@contextlib.contextmanager
def running_server(settings: ServerSettings) -> Iterator[str]:
    """A real uvicorn server with the app, in a thread; yields its base URL."""
    with serving(settings):
        yield f"http://127.0.0.1:{settings.port}"


# The test servers' cap on concurrent streams: their tests open several at once (ElevenLabs'
# five contexts a socket, concurrency checks), more than the default of one per synthesis
# worker admits. The default cap and what a refused client sees: tests/reliability/.
TEST_MAX_STREAMS = 32


@pytest.fixture(scope="session")
def live_server() -> Iterator[uvicorn.Server]:
    """The session's shared server (``server_url`` is its address)."""
    settings = ServerSettings(port=free_port(), workers=2, max_streams=TEST_MAX_STREAMS)
    with serving(settings) as server:
        yield server


@pytest.fixture(scope="session")
def server_url(live_server: uvicorn.Server) -> str:
    return f"http://127.0.0.1:{live_server.config.port}"


@pytest.fixture
def server_factory() -> Callable[..., contextlib.AbstractContextManager[str]]:
    """Start a dedicated server with non-default settings (one per test)."""

    def start(**settings: object) -> contextlib.AbstractContextManager[str]:
        settings.setdefault("max_streams", TEST_MAX_STREAMS)
        return running_server(ServerSettings(port=free_port(), **settings))  # type: ignore[arg-type]

    return start
