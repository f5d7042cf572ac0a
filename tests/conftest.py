"""The shared fixtures (``tests.support.fixtures``): the real voices and engines, a real server."""

from tests.support.fixtures import (
    engine,
    kokoro_engine,
    kokoro_registry,
    live_server,
    registry,
    server_factory,
    server_url,
)

__all__ = [
    "engine",
    "kokoro_engine",
    "kokoro_registry",
    "live_server",
    "registry",
    "server_factory",
    "server_url",
]
