"""Reading Wyoming events from a byte stream, with an answer for every malformed one.

A Wyoming event is a JSON header line, then ``data_length`` bytes of JSON data merged into the
header's ``data``, then ``payload_length`` bytes of payload. The ``wyoming`` package's reader
reports a malformed header as the end of the stream (the connection just closes) and lets a
header nested deeply enough escape as ``RecursionError``. Here every malformed event raises
``BadEvent`` with a clear message, so the connection answers it with an ``error`` event:

* a header line that is not a JSON object of the right shape: the line is consumed whole, so the
  next line is the next event and the connection goes on;
* a header whose lengths are not usable, data that is not a JSON object, or a line longer than
  the stream's limit: the framing after it cannot be trusted, so ``fatal`` is set and the
  connection closes after the error.
"""

from __future__ import annotations

import asyncio
import warnings
from dataclasses import dataclass
from typing import Any

from voxflow.session.errors import SessionError
from voxflow.transports.json_body import decode_object

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", "'audioop' is deprecated", DeprecationWarning)
    from wyoming.event import Event

__all__ = [
    "DEFAULT_FRAME_LIMITS",
    "MAX_DATA_BYTES",
    "MAX_LINE_BYTES",
    "MAX_PAYLOAD_BYTES",
    "BadEvent",
    "FrameLimits",
    "read_event",
]

# The defaults (``ServerSettings.wyoming_max_*`` sets them). A length is checked against its limit
# from the header, before a byte of that part is read, so nothing over a limit is ever buffered.
MAX_LINE_BYTES = 1 << 20  # a header line; Wyoming puts long texts in the data part
MAX_DATA_BYTES = 1 << 20  # a synthesize text of 10,000 characters is under 60 KB of JSON
MAX_PAYLOAD_BYTES = 1 << 20  # a TTS server is sent text: no event it reads carries a payload


@dataclass(frozen=True)
class FrameLimits:
    """The most bytes one event's parts may take. ``line`` must also be the limit of the
    ``StreamReader`` the events are read from (``asyncio.start_server(limit=...)``)."""

    line: int = MAX_LINE_BYTES
    data: int = MAX_DATA_BYTES
    payload: int = MAX_PAYLOAD_BYTES


DEFAULT_FRAME_LIMITS = FrameLimits()


class BadEvent(SessionError):
    """A malformed event; ``fatal`` when the stream cannot be read past it."""

    def __init__(self, message: str, fatal: bool = False) -> None:
        super().__init__("invalid_event", message)
        self.fatal = fatal


async def read_event(
    reader: asyncio.StreamReader, limits: FrameLimits = DEFAULT_FRAME_LIMITS
) -> Event | None:
    """The next event, or None at the end of the stream (also when cut off inside an event)."""
    try:
        line = await reader.readline()
    except ValueError:  # LimitOverrunError: the line is longer than the stream's limit
        raise BadEvent(f"event header longer than {limits.line} bytes", fatal=True) from None
    if not line:
        return None
    if not line.endswith(b"\n"):
        return None  # cut off inside the header
    header = _decode(line, "event header")
    kind = header.get("type")
    if not isinstance(kind, str) or not kind:
        raise BadEvent("event header needs a string 'type'")
    data = header.get("data", {})
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise BadEvent(f"{kind} data must be an object")
    data_length = _length(header, "data_length", limits.data)
    payload_length = _length(header, "payload_length", limits.payload)
    try:
        if data_length:
            data = {**data, **_decode(await reader.readexactly(data_length), f"{kind} data")}
        payload = await reader.readexactly(payload_length) if payload_length else None
    except asyncio.IncompleteReadError:
        return None
    except BadEvent as error:
        raise BadEvent(str(error), fatal=True) from None
    return Event(type=kind, data=data, payload=payload)


def _decode(raw: bytes, what: str) -> dict[str, Any]:
    try:
        return decode_object(raw)
    except SessionError as error:
        raise BadEvent(f"{what}: {error.message}") from None


def _length(header: dict[str, Any], name: str, limit: int) -> int:
    value = header.get(name)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= limit:
        raise BadEvent(f"{name} must be an integer from 0 to {limit}", fatal=True)
    return value
