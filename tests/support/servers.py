"""Real servers for tests: the app under uvicorn in a thread of this process, on a free port."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator

import uvicorn

from voxflow.config import ServerSettings
from voxflow.engines.router import EngineRouter
from voxflow.server.app import create_app
from voxflow.server.uvicorn_config import uvicorn_config

__all__ = ["TEST_MAX_STREAMS", "free_port", "running_server", "serving"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def serving(
    settings: ServerSettings, engine: EngineRouter | None = None, join_s: float = 15.0
) -> Iterator[uvicorn.Server]:
    """A real uvicorn server with the app, in a thread of this process, as in production;
    yields the started server (its app is ``server.config.app``). ``engine``: the test
    session's (the ``served_engine`` fixture), loaded once for every server that serves the
    bundled voice; None: the server loads its own, as ``voxflow serve`` does."""
    # As ``voxflow serve`` configures it (the protocol with its limits, WebSocket sizes).
    app = create_app(settings, engine)
    config = uvicorn_config(app, settings, log_level="warning", lifespan="on")
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
def running_server(settings: ServerSettings, engine: EngineRouter | None = None) -> Iterator[str]:
    """A real uvicorn server with the app, in a thread; yields its base URL."""
    with serving(settings, engine):
        yield f"http://127.0.0.1:{settings.port}"


# The test servers' cap on concurrent streams: their tests open several at once (ElevenLabs'
# five contexts a socket, concurrency checks), more than the default of one per synthesis
# worker admits. The default cap and what a refused client sees: tests/reliability/.
TEST_MAX_STREAMS = 32
