"""Logs an operator can use: a level, text or JSON lines, a request id on every line, no secrets.

``voxflow serve`` calls ``configure_logging(settings)`` once, before uvicorn starts (with
``log_config=None``, so uvicorn adds no handlers of its own): one stderr handler on the root
logger, and uvicorn's loggers propagate to it. Importing this module changes nothing.

* **Request ids.** ``RequestIdMiddleware`` (pure ASGI, outside the security checks) gives each
  HTTP request and WebSocket handshake an id: the client's ``x-request-id`` when it is a sane
  token (1 to 128 of ``[A-Za-z0-9._-]``), else a new one. It is set in a context variable that
  ``RequestIdFilter`` copies onto every record logged while the request is handled (uvicorn's
  access line and its WebSocket ``[accepted]`` line included: both are logged from the app's
  ``send``), and it goes back in the answer's ``x-request-id`` header (the WebSocket's 101, or
  its refusal).
* **No secrets.** uvicorn logs each request's path *with its query string*, where a browser puts
  its API key. ``RedactFilter`` strips query strings and the values of ``Authorization``,
  ``xi-api-key`` and ``api_key``-like fields, and blanks every configured key wherever it shows
  up, in the message, its arguments and its traceback. It sits on uvicorn's loggers themselves
  (a logger's filters see its records before any handler, pytest's caplog included) and on our
  handler (which every other logger's records reach).
"""

from __future__ import annotations

import json
import logging
import re
import sys
import uuid
from collections.abc import Callable, Iterable
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any, TextIO

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from voxflow.config import ServerSettings

__all__ = [
    "HANDSHAKE_REFUSED",
    "REQUEST_ID",
    "REQUEST_ID_HEADER",
    "JsonFormatter",
    "RedactFilter",
    "RefusedHandshakeFilter",
    "RequestIdFilter",
    "RequestIdMiddleware",
    "configure_logging",
    "request_id_for",
    "text_formatter",
]

REQUEST_ID: ContextVar[str | None] = ContextVar("voxflow_request_id", default=None)
REQUEST_ID_HEADER = "x-request-id"
_SANE_ID = re.compile(r"[A-Za-z0-9._-]{1,128}")
# The messages that open an answer: where the id header goes.
_HEAD_MESSAGES = frozenset(
    {"http.response.start", "websocket.accept", "websocket.http.response.start"}
)

# uvicorn's websockets-sansio protocol logs an ERROR after every handshake refused with an HTTP
# response (it never marks that handshake complete: Kludex/uvicorn#3138, open). The refusal sets
# this in its task's context, and RefusedHandshakeFilter drops that one false line.
HANDSHAKE_REFUSED: ContextVar[bool] = ContextVar("voxflow_handshake_refused", default=False)
_INCOMPLETE_HANDSHAKE = "ASGI callable returned without completing handshake."

# The loggers uvicorn writes to: the access line, errors and WebSocket handshakes.
UVICORN_LOGGERS = ("uvicorn", "uvicorn.error", "uvicorn.access", "uvicorn.asgi")

REDACTED = "[redacted]"
# A query string after a path or URL ("/v1/stream?api_key=..."): the whole of it goes.
_QUERY = re.compile(r"(?<=[\w/.~%-])\?[^\s\"'<>]+")
# A credential's value after its name: header lines, dict and header-tuple reprs, key=value.
_NAMED = re.compile(
    r"(?i)\b(authorization|proxy-authorization|xi-api-key|xi_api_key|x-api-key|api[_-]key)"
    r"(['\"]?\s*[:=,]\s*(?:b?['\"])?)(?:bearer\s+)?[^\s'\",;)}\]]+"
)
_BEARER = re.compile(r"(?i)\b(bearer)\s+[^\s'\",;)}\]]+")


def request_id_for(client_value: str | None) -> str:
    """The client's id when it is a sane token (it may tie our lines to its own), else a new one."""
    if client_value is not None and _SANE_ID.fullmatch(client_value):
        return client_value
    return uuid.uuid4().hex


class RequestIdMiddleware:
    """Sets ``REQUEST_ID`` for one request or handshake and echoes it as ``x-request-id``.

    Pure ASGI: the scope goes through unchanged and ``send`` only gains a header on the head, so
    streamed bodies (and the HTTP adapter's abort in the scope) are untouched.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        client_value = None
        for name, value in scope.get("headers", ()):
            if name == REQUEST_ID_HEADER.encode():
                client_value = value.decode("latin-1")
                break
        request_id = request_id_for(client_value)
        header = (REQUEST_ID_HEADER.encode(), request_id.encode("ascii"))

        async def send_with_id(message: Message) -> None:
            if message["type"] in _HEAD_MESSAGES:
                headers = list(message.get("headers") or ())
                if not any(name.lower() == header[0] for name, _ in headers):
                    message = {**message, "headers": [*headers, header]}
            await send(message)

        token = REQUEST_ID.set(request_id)
        await self.app(scope, receive, send_with_id)
        # Reset only after a normal return: after an exception the id stays set in this task's
        # context, so the server's own "Exception in ASGI application" line carries it too (the
        # server runs each request in a task of its own, so it reaches no other request).
        REQUEST_ID.reset(token)


class RequestIdFilter(logging.Filter):
    """Puts the id of the request being handled (if any) on the record as ``request_id``."""

    def filter(self, record: logging.LogRecord) -> bool:
        request_id = REQUEST_ID.get()
        if request_id is not None and getattr(record, "request_id", None) is None:
            record.request_id = request_id
        return True


class RefusedHandshakeFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not (HANDSHAKE_REFUSED.get() and record.msg == _INCOMPLETE_HANDSHAKE)


class RedactFilter(logging.Filter):
    """Strips query strings and credentials from a record, in place, before anything formats it.

    Arguments keep their place and type where nothing was found (uvicorn's access formatter
    unpacks its five arguments by position); running it twice changes nothing more.
    """

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        super().__init__()
        # Longest first, so a key that contains another is blanked whole.
        self._secrets = sorted({s for s in secrets if s}, key=len, reverse=True)

    def redact(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, REDACTED)
        text = _NAMED.sub(rf"\1\2{REDACTED}", text)
        text = _BEARER.sub(rf"\1 {REDACTED}", text)
        return _QUERY.sub("", text)

    def _argument(self, value: object) -> object:
        if value is None or isinstance(value, int | float):
            return value
        text = value if isinstance(value, str) else str(value)
        redacted = self.redact(text)
        return value if redacted == text else redacted

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str):
            record.msg = self.redact(record.msg)
        elif record.msg is not None:
            record.msg = self._argument(record.msg)
        if isinstance(record.args, tuple):
            record.args = tuple(self._argument(arg) for arg in record.args)
        elif isinstance(record.args, dict):
            record.args = {key: self._argument(arg) for key, arg in record.args.items()}
        if record.exc_info and not record.exc_text:
            # Formatted once here, redacted, and cached where every formatter looks first.
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self.redact(record.exc_text)
        if record.stack_info:
            record.stack_info = self.redact(record.stack_info)
        return True


def text_formatter() -> logging.Formatter:
    return logging.Formatter(
        "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s",
        defaults={"request_id": "-"},
    )


class JsonFormatter(logging.Formatter):
    """One JSON object a line: time, level, logger, message, request_id, and exc_info if any."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "request_id": getattr(record, "request_id", None),
        }
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            entry["exc_info"] = record.exc_text
        if record.stack_info:
            entry["stack_info"] = record.stack_info
        return json.dumps(entry, ensure_ascii=False, default=str)


def configure_logging(
    settings: ServerSettings, keys: Iterable[str] = (), stream: TextIO | None = None
) -> Callable[[], None]:
    """Route every log line through one handler at ``settings.log_level``, in
    ``settings.log_format``, with request ids and without ``keys`` or query strings.

    Returns a function that puts back what was there before (for tests; the CLI never calls it).
    """
    handler = logging.StreamHandler(sys.stderr if stream is None else stream)
    handler.setFormatter(JsonFormatter() if settings.log_format == "json" else text_formatter())
    redact = RedactFilter(keys)
    request_ids = RequestIdFilter()
    refused = RefusedHandshakeFilter()
    handler.addFilter(request_ids)
    handler.addFilter(redact)

    root = logging.getLogger()
    saved_root = (root.handlers[:], root.level)
    root.handlers = [handler]
    root.setLevel(settings.log_level.upper())

    saved: list[tuple[logging.Logger, list[logging.Handler], bool, int]] = []
    for name in UVICORN_LOGGERS:
        logger = logging.getLogger(name)
        saved.append((logger, logger.handlers[:], logger.propagate, logger.level))
        # uvicorn's own handlers would print unredacted copies: its records come to ours.
        logger.handlers = []
        logger.propagate = True
        logger.setLevel(settings.log_level.upper())
        logger.addFilter(request_ids)
        logger.addFilter(redact)
        logger.addFilter(refused)

    def restore() -> None:
        root.handlers, level = saved_root
        root.setLevel(level)
        for logger, handlers, propagate, logger_level in saved:
            logger.handlers = handlers
            logger.propagate = propagate
            logger.setLevel(logger_level)
            logger.removeFilter(request_ids)
            logger.removeFilter(redact)
            logger.removeFilter(refused)
        handler.close()

    return restore
