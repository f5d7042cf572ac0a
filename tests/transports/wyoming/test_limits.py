"""Wyoming's byte limits, end to end: an event announcing more than a limit is answered with an
error and the connection closes, before a byte of the part over the limit is read; the limits are
the settings' ``wyoming_max_*``."""

from __future__ import annotations

import asyncio
import dataclasses
import json

from wyoming.event import Event, async_read_event

from tests.support.wyoming_client import serve
from tests.support.wyoming_messages import Error
from voxflow.config import ServerSettings
from voxflow.server.services import Services
from voxflow.transports.wyoming.framing import FrameLimits
from voxflow.transports.wyoming.server import WyomingServerHandle


async def _exchange(handle: WyomingServerHandle, sent: bytes) -> list[Event | None]:
    """Send ``sent`` and nothing more; the next two events (None: the connection closed)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", handle.port)
    try:
        writer.write(sent)
        await writer.drain()
        return [await async_read_event(reader), await async_read_event(reader)]
    finally:
        writer.close()
        await writer.wait_closed()


def _header(kind: str, **fields: object) -> bytes:
    return json.dumps({"type": kind, **fields}).encode() + b"\n"


def _error_then_close(events: list[Event | None]) -> str:
    error, after = events
    assert error is not None and error.type == "error"
    assert Error.from_event(error).code == "invalid_event"
    assert after is None  # the framing after it cannot be trusted: closed
    return Error.from_event(error).text


def test_a_header_announcing_200_mib_gets_an_error_without_a_payload_byte_read(
    services: Services,
) -> None:
    header = _header("synthesize", data={"text": "Hi."}, payload_length=200 << 20)

    # None of the 200 MiB is sent: the answer cannot be waiting for it (or buffering it).
    text = _error_then_close(serve(services, lambda handle: _exchange(handle, header)))
    assert "payload_length" in text and str(ServerSettings().wyoming_max_payload_bytes) in text


def test_the_limits_are_the_settings(services: Services) -> None:
    settings = ServerSettings(
        workers=2,
        wyoming_max_line_bytes=256,
        wyoming_max_data_bytes=64,
        wyoming_max_payload_bytes=16,
    )
    limited = dataclasses.replace(services, settings=settings)
    over = {
        "line": _header("describe", pad="a" * 300),
        "data": _header("describe", data_length=65) + b"{" + b" " * 63 + b"}",
        "payload": _header("describe", payload_length=17) + b"a" * 17,
    }
    for part, sent in over.items():
        text = _error_then_close(serve(limited, lambda handle, sent=sent: _exchange(handle, sent)))
        assert str({"line": 256, "data": 64, "payload": 16}[part]) in text, part

    # At the limit exactly, the event is read and answered.
    at_limit = _header("describe", payload_length=16) + b"a" * 16
    info, _ = serve(limited, lambda handle: _exchange(handle, at_limit + _header("ping")))
    assert info is not None and info.type == "info"


def test_the_framing_defaults_are_the_settings_defaults() -> None:
    defaults = ServerSettings()
    assert FrameLimits() == FrameLimits(
        line=defaults.wyoming_max_line_bytes,
        data=defaults.wyoming_max_data_bytes,
        payload=defaults.wyoming_max_payload_bytes,
    )
