"""``POST /v1/cache/prefetch``: render what an agent will probably say next into the phrase cache.

The body is a native ``prefetch`` message without its ``type``: ``text`` and the ``start``
options that change the audio (``voice``, ``speed``, ``seed``, ...). The text is cut as a
whole-text request cuts it (``Session.prefetch``) and each engine request is rendered when the
workers have nothing due. ``202 {"segments": n}`` at once; with ``"wait": true``, ``200`` once
every segment is in the cache, with where each came from (``rendered``, ``cached``) or why it
failed. A bad body is a 400 with the native error object; a server without a cache answers 409
``cache_disabled``; a full background queue 429 ``prefetch_queue_full``.
"""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi.responses import JSONResponse

from voxflow.connection.gateway import Gateway
from voxflow.runtime.cache.background import BackgroundQueueFull
from voxflow.session.errors import SessionError
from voxflow.session.events import ErrorOut
from voxflow.transports.json_body import decode_object
from voxflow.transports.native.errors import http_error
from voxflow.transports.native.protocol import parse_start

__all__ = ["prefetch"]

WAIT_S = 60.0  # a waiting prefetch answers 504 after this (its rendering goes on)


async def prefetch(body: bytes, gateway: Gateway) -> JSONResponse:
    try:
        message = decode_object(body, "body")
        text = message.get("text")
        if not isinstance(text, str):
            raise SessionError("invalid_message", "the body needs a string 'text'")
        wait = message.get("wait", False)
        if not isinstance(wait, bool):
            raise SessionError("invalid_message", "wait must be true or false")
        options = parse_start(message)
        futures = gateway.prefetch(options, text)
    except SessionError as error:
        return _error(ErrorOut(None, error.code, error.message, error.retryable))
    if any(f.done() and isinstance(f.exception(), BackgroundQueueFull) for f in futures):
        return _error(
            ErrorOut(None, "prefetch_queue_full", "too many prefetches are waiting", True)
        )
    if not wait:
        return JSONResponse({"segments": len(futures)}, status_code=202)
    try:
        async with asyncio.timeout(WAIT_S):
            results = await asyncio.gather(
                *(asyncio.wrap_future(f) for f in futures), return_exceptions=True
            )
    except TimeoutError:
        late = ErrorOut(None, "prefetch_timeout", f"not rendered within {WAIT_S:.0f} s", True)
        return _error(late)
    return JSONResponse(
        {"segments": len(futures), "results": [_result(r) for r in results]}, status_code=200
    )


def _result(result: str | BaseException) -> dict[str, Any]:
    if isinstance(result, BaseException):
        return {"status": "failed", "error": str(result)}
    return {"status": result}


def _error(event: ErrorOut) -> JSONResponse:
    error = http_error(event.code, event.message)
    return JSONResponse(error.body, status_code=error.status)
