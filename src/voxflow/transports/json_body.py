"""JSON on the wire, shared by every protocol: decoding a client frame or request body that may be
anything, and encoding a server frame.

A client frame can be malformed in ways ``json.loads`` does not report as a ``JSONDecodeError``:
nesting deep enough to exhaust the recursion limit raises ``RecursionError``, an integer of more
than 4,300 digits raises ``ValueError``, and ``"\\ud800"`` decodes to a lone surrogate that no
UTF-8 encoder accepts, so echoing it back (in an error, a word timing) would fail later, far from
its cause. ``json.loads`` also accepts what JSON does not have: ``NaN``, ``Infinity`` and
``-Infinity``, and turns a number too large for a float (``1e400``) into an infinity; a NaN that
got in would come back out as ``NaN`` (not JSON) in a reply, or reach the engine as a speed.
``decode_object`` turns all of them into a ``SessionError`` with a clear message, so each protocol
answers in its own error shape and the connection stays usable.

HTTP bodies are decoded by FastAPI with ``json.loads`` before any of our code runs: ``RequestBody``
is the base of their models, which checks the decoded value the same way (``check_decoded``) and
never fails FastAPI's validation, whose 422 answer has neither protocol's error shape (and is a
500 when it echoes a NaN or a surrogate): a refused body is answered by the endpoint, in its
protocol's shape (``RequestBody.checked``).

Every JSON the server writes goes through ``dump``, which refuses NaN and the infinities
(``allow_nan=False``): a reply is valid JSON or a bug that fails loudly where it is made.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, PrivateAttr, ValidationError, model_validator
from pydantic_core.core_schema import ValidatorFunctionWrapHandler

from voxflow.session.errors import SessionError

__all__ = ["BodyError", "RequestBody", "check_decoded", "decode_object", "dump"]

# A \uD800-\uDFFF escape: the only way a lone surrogate gets into a decoded JSON string (a text
# frame is valid UTF-8, which cannot hold one).
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _no_constant(name: str) -> float:
    # json.loads calls this for NaN, Infinity and -Infinity, which JSON does not have.
    raise ValueError(f"{name} is not a JSON number")


def _finite_float(literal: str) -> float:
    value = float(literal)
    if not math.isfinite(value):  # 1e400: json.loads would make it an infinity
        shown = literal if len(literal) <= 40 else literal[:37] + "..."
        raise ValueError(f"number {shown} is too large")
    return value


def decode_object(raw: str | bytes, what: str = "message") -> dict[str, Any]:
    """The JSON object in ``raw``; ``SessionError("invalid_json" | "invalid_message")`` if it is
    not one that the server can safely handle (``what`` names it in the message)."""
    try:
        message = json.loads(raw, parse_constant=_no_constant, parse_float=_finite_float)
    except RecursionError:
        raise SessionError("invalid_json", f"{what} is nested too deeply") from None
    except UnicodeDecodeError:
        raise SessionError("invalid_json", f"{what} is not UTF-8") from None
    except ValueError as error:  # JSONDecodeError, NaN, 1e400, an integer of 4,300+ digits
        raise SessionError("invalid_json", f"{what} is not valid JSON: {error}") from None
    if not isinstance(message, dict):
        raise SessionError("invalid_message", f"{what} must be a JSON object")
    text = raw if isinstance(raw, str) else raw.decode("utf-8", "replace")
    if _SURROGATE_ESCAPE.search(text) is not None:
        check_decoded(message, what)
    return message


def check_decoded(value: object, what: str = "message") -> None:
    """Refuse a value decoded by a lenient ``json.loads`` (FastAPI's) that holds what
    ``decode_object`` refuses: a NaN or an infinity, or a lone surrogate in a string or a key.

    Iterative: the value may be nested as deeply as the decoder allowed, which a recursive walk
    from further down the stack would not survive.
    """
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if _LONE_SURROGATE.search(item) is not None:
                raise SessionError(
                    "invalid_message", f"{what} holds a lone UTF-16 surrogate (not a character)"
                )
        elif isinstance(item, float):
            if not math.isfinite(item):
                raise SessionError(
                    "invalid_json",
                    f"{what} is not valid JSON: it holds NaN, an infinity or a number too large",
                )
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def dump(body: dict[str, Any]) -> str:
    """A compact JSON text (non-ASCII characters as themselves); ``ValueError`` on a NaN or an
    infinity, which JSON does not have."""
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


class BodyError(SessionError):
    """A refused request body; ``field`` names the field at fault, where one is."""

    def __init__(self, code: str, message: str, field: str | None = None) -> None:
        super().__init__(code, message)
        self.field = field


class RequestBody(BaseModel):
    """The base of an HTTP endpoint's JSON body model.

    Types are strict (a boolean is not a number, a number is not a string; unknown fields are
    ignored) and ranges are ``voxflow.session.options``' to check. The model never fails
    validation: a body FastAPI hands over (decoded with the lenient ``json.loads``), the raw
    bytes of one (decoded here with ``decode_object``) or anything else that is not an
    acceptable object gives an instance that only records why (``checked`` raises it as a
    ``BodyError``), so that the endpoint answers in its protocol's error shape, never FastAPI's
    422.
    """

    model_config = ConfigDict(extra="ignore", strict=True)

    _refusal: BodyError | None = PrivateAttr(default=None)

    @model_validator(mode="wrap")
    @classmethod
    def _record_refusal(cls, data: Any, handler: ValidatorFunctionWrapHandler) -> Self:
        if isinstance(data, cls):
            return data
        try:
            if isinstance(data, bytes):  # the raw body (FastAPI hands over a decoded one)
                data = decode_object(data, "request body")
            elif isinstance(data, dict):
                check_decoded(data, "request body")
            else:
                raise SessionError("invalid_message", "request body must be a JSON object")
            body: Self = handler(data)
            return body
        except SessionError as error:
            refusal = BodyError(error.code, error.message)
        except ValidationError as error:
            refusal = _refusal_of(error)
        refused = cls.model_construct()
        refused._refusal = refusal
        return refused

    def checked(self) -> Self:
        """This body, or its ``BodyError`` if it was refused."""
        if self._refusal is not None:
            raise self._refusal
        return self


def _refusal_of(error: ValidationError) -> BodyError:
    """The first problem pydantic found, without the value itself (which may be anything)."""
    first = error.errors(include_url=False, include_input=False, include_context=False)[0]
    where = ".".join(str(part) for part in first["loc"])
    field = str(first["loc"][0]) if first["loc"] else None
    message = first["msg"]
    return BodyError("invalid_request", f"{where}: {message}" if where else message, field)
