"""The connection limits as settings: validated, read from ``VOXFLOW_*`` and ``voxflow serve``
flags, and turned into the uvicorn config both the CLI and the tests run."""

from __future__ import annotations

import resource
from collections.abc import Iterator
from typing import Any

import pytest

from voxflow.cli.main import build_parser
from voxflow.cli.serve import limit_overrides
from voxflow.config import ServerSettings
from voxflow.server.http_protocol import LimitedHttpProtocol
from voxflow.server.limits import FD_HEADROOM, HttpLimits, raise_open_file_limit
from voxflow.server.uvicorn_config import uvicorn_config


async def _app(scope: Any, receive: Any, send: Any) -> None:
    raise AssertionError("never served")


@pytest.mark.parametrize(
    "field",
    [
        "header_timeout_s",
        "body_timeout_s",
        "keepalive_timeout_s",
        "max_body_bytes",
        "ws_max_message_bytes",
        "wyoming_max_payload_bytes",
    ],
)
def test_limits_must_be_positive(field: str) -> None:
    with pytest.raises(ValueError, match=field):
        ServerSettings(**{field: 0})  # type: ignore[arg-type]


def test_the_cap_and_reserve_must_not_be_negative() -> None:
    with pytest.raises(ValueError, match="max_connections"):
        ServerSettings(max_connections=-1)
    with pytest.raises(ValueError, match="health_reserve"):
        ServerSettings(health_reserve=-1)


def test_limits_come_from_the_environment() -> None:
    env = {"VOXFLOW_HEADER_TIMEOUT_S": "2.5", "VOXFLOW_MAX_BODY_BYTES": "4096"}
    settings = ServerSettings.from_env(env)
    assert settings.header_timeout_s == 2.5 and settings.max_body_bytes == 4096


def test_serve_flags_override_the_settings() -> None:
    args = build_parser().parse_args(
        ["serve", "--header-timeout", "3", "--max-connections", "50", "--max-body-bytes", "9000"]
    )
    env = {"VOXFLOW_MAX_CONNECTIONS": "7", "VOXFLOW_BODY_TIMEOUT_S": "4"}
    settings = ServerSettings.from_env(env, **limit_overrides(args))
    assert (settings.header_timeout_s, settings.max_connections) == (3.0, 50)
    assert (settings.max_body_bytes, settings.body_timeout_s) == (9000, 4.0)


def test_the_default_cap_leaves_the_reserve_and_headroom_of_the_fd_limit() -> None:
    limits = HttpLimits.from_settings(ServerSettings(health_reserve=32), fd_limit=1024)
    assert limits.max_connections == 1024 - 32 - FD_HEADROOM
    explicit = HttpLimits.from_settings(ServerSettings(max_connections=10), fd_limit=1024)
    assert explicit.max_connections == 10


def test_the_uvicorn_config_carries_the_limits() -> None:
    settings = ServerSettings(port=8123, max_body_bytes=5000, ws_max_message_bytes=70_000)
    config = uvicorn_config(_app, settings, fd_limit=2048, log_level="warning")
    config.load()
    protocol = config.http_protocol_class
    assert issubclass(protocol, LimitedHttpProtocol)
    assert protocol.limits.max_body_bytes == 5000
    assert protocol.limits.max_connections == 2048 - settings.health_reserve - FD_HEADROOM
    assert (config.port, config.ws_max_size) == (8123, 70_000)
    # Each server has its own gate: one server's connections never make room in another.
    other = uvicorn_config(_app, settings, fd_limit=2048)
    other.load()
    other_protocol = other.http_protocol_class
    assert issubclass(other_protocol, LimitedHttpProtocol)
    assert other_protocol.gate is not protocol.gate


@pytest.fixture
def lowered_fd_limit() -> Iterator[tuple[int, int]]:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < 512:
        pytest.skip("needs a finite hard open-file limit and room to lower the soft one")
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft - 1, hard))
    try:
        yield soft, hard
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_serving_raises_the_open_file_limit_to_the_hard_one(
    lowered_fd_limit: tuple[int, int],
) -> None:
    _, hard = lowered_fd_limit
    assert raise_open_file_limit() == hard
    assert resource.getrlimit(resource.RLIMIT_NOFILE) == (hard, hard)
