"""The native protocol's server events as JSON: one table of their fields, which the server's
encoder (``voxflow.transports.native.protocol.encode_event``) writes and the client's parser
(``voxflow.client.messages.parse_event``) reads, so the two cannot drift apart.

Each event is a ``Message``: its ``type`` and its fields in wire order, each with its JSON kind,
the decimals a number is rounded to when written, and whether it may be absent (``optional``:
left out when ``None``) or ``null`` (``nullable``). ``Message.encode`` checks nothing (the server
builds its events from typed values); ``Message.decode`` checks everything (a client cannot trust
the wire) and raises ``ValueError``. Audio travels as base64 in ``audio``, or, with
``?audio=binary``, as a binary frame after the header, whose ``bytes`` gives its length.

Stdlib only: the client imports this module without the server's dependencies.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "AUDIO",
    "CANCELLED",
    "DONE",
    "DONE_METRICS",
    "ERROR",
    "MESSAGES",
    "TIMESTAMPS",
    "WORD",
    "Field",
    "Message",
    "decode_audio",
    "encode_audio",
]

Kind = Literal["str", "int", "number", "bool", "object", "list"]
_PYTHON: Mapping[Kind, type | tuple[type, ...]] = {
    "str": str,
    "int": int,
    "number": (int, float),
    "bool": bool,
    "object": dict,
    "list": list,
}


@dataclass(frozen=True)
class Field:
    name: str
    kind: Kind
    digits: int | None = None  # a number's decimals on the wire
    optional: bool = False  # may be absent (and is left out when None)
    nullable: bool = False  # may be null
    item: Message | None = None  # an object's fields, or each item's of a list

    def encode(self, value: Any) -> Any:
        if value is None:
            return None
        if self.digits is not None:
            return round(value, self.digits)
        if self.item is not None and self.kind == "list":
            return [self.item.encode(element) for element in value]
        if self.item is not None:
            return self.item.encode(value)
        return value

    def decode(self, message: Mapping[str, Any]) -> Any:
        value: Any = message.get(self.name)
        if value is None and (self.nullable or (self.optional and self.name not in message)):
            return None
        # JSON true is a Python int: no field of this protocol takes both.
        fits = isinstance(value, _PYTHON[self.kind])
        if not fits or (isinstance(value, bool) and self.kind != "bool"):
            raise ValueError(f"field {self.name!r} is missing or has the wrong type: {value!r}")
        if self.kind == "number":
            return float(value)
        if self.item is not None and self.kind == "list":
            return [self.item.decode(element) for element in value]
        if self.item is not None:
            return self.item.decode(value)
        return value


@dataclass(frozen=True)
class Message:
    """An event's (or a nested object's) fields; ``type`` is None for a nested object."""

    type: str | None
    fields: tuple[Field, ...]

    def encode(self, values: Any) -> dict[str, Any]:
        """The JSON object for ``values``: a mapping, or an object with the fields as attributes."""
        get = values.get if isinstance(values, Mapping) else lambda name: getattr(values, name)
        body: dict[str, Any] = {} if self.type is None else {"type": self.type}
        for field in self.fields:
            value = field.encode(get(field.name))
            if value is not None or not field.optional:
                body[field.name] = value
        return body

    def decode(self, message: object) -> dict[str, Any]:
        """The fields' values of the JSON object ``message``; ``ValueError`` if it does not fit."""
        if not isinstance(message, dict):
            raise ValueError(f"expected a JSON object, got {message!r}")
        return {field.name: field.decode(message) for field in self.fields}


WORD = Message(
    None,
    (
        Field("word", "str"),
        Field("start_ms", "number", digits=1),
        Field("end_ms", "number", digits=1),
        Field("char_start", "int"),
        Field("char_end", "int"),
    ),
)
DONE_METRICS = Message(
    None,
    (
        Field("ttfa_ms", "number", digits=2, nullable=True),
        Field("audio_ms", "number", digits=2),
        Field("synth_ms", "number", digits=2),
        Field("rtf", "number", digits=4, nullable=True),
        Field("chunks", "int"),
        Field("deadline_misses", "int"),
        # Its first segment came from the phrase cache (null: the server has no cache).
        Field("cached", "bool", nullable=True),
    ),
)
AUDIO = Message(
    "audio",
    (
        Field("context_id", "str"),
        Field("seq", "int"),
        Field("offset_ms", "number", digits=3),
        Field("duration_ms", "number", digits=3),
        # A context's first audio only: how many characters of its text had arrived when its
        # first segment was cut (the text this audio waited for).
        Field("text_end", "int", optional=True),
    ),
)
TIMESTAMPS = Message("timestamps", (Field("context_id", "str"), Field("words", "list", item=WORD)))
DONE = Message("done", (Field("context_id", "str"), Field("metrics", "object", item=DONE_METRICS)))
CANCELLED = Message(
    "cancelled",
    (
        Field("context_id", "str"),
        Field("spoken_text", "str"),
        Field("played_ms", "number", digits=2),
        Field("latency_ms", "number", digits=3),
    ),
)
ERROR = Message(
    "error",
    (
        Field("context_id", "str", nullable=True),  # null: about the connection
        Field("code", "str"),
        Field("message", "str"),
        Field("retryable", "bool"),
        Field("retry_after_ms", "int", optional=True),  # the server is full: when to try again
    ),
)
MESSAGES: Mapping[str, Message] = {
    message.type: message
    for message in (AUDIO, TIMESTAMPS, DONE, CANCELLED, ERROR)
    if message.type is not None
}


def encode_audio(body: dict[str, Any], data: bytes, binary: bool) -> bytes | None:
    """Put an audio event's ``data`` in its ``body`` (base64), or, in binary mode, its length,
    returning the binary frame that must follow."""
    if binary:
        body["bytes"] = len(data)
        return data
    body["audio"] = base64.b64encode(data).decode("ascii")
    return None


def decode_audio(message: Mapping[str, Any]) -> bytes:
    """An audio event's base64 ``audio``, decoded; ``ValueError`` if it is not valid base64."""
    audio = message.get("audio")
    if not isinstance(audio, str):
        raise ValueError(f"field 'audio' is missing or has the wrong type: {audio!r}")
    try:
        return base64.b64decode(audio, validate=True)
    except binascii.Error as error:
        raise ValueError(f"audio is not base64: {error}") from error
