"""Deepgram-compatible ``POST /v1/speak``: one request's text, its audio streamed as it renders.

The query string is the WebSocket's (``query``: ``model``, ``encoding``, ``sample_rate``,
``container``, ``bit_rate``, ``speed``) and the body is ``{"text": "..."}``, at most 2000
characters as Deepgram allows. The answer is the audio in the format asked for (Deepgram's
default, ``linear16`` in a WAV container at 24 kHz, when none is), with Deepgram's ``dg-*``
headers; it runs on the connection runner (``transports.http_response``) as every HTTP answer
does. A refusal is Deepgram's REST error object, ``{"err_code", "err_msg", "request_id"}``
(``errors.http_error``). ``callback`` (Deepgram posts the audio to a URL later) is refused: the
audio is always the response.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import replace

from fastapi.responses import JSONResponse, Response
from pydantic import Field

from voxflow.connection.gateway import Gateway
from voxflow.connection.wire import Reply
from voxflow.session import options
from voxflow.session.errors import SessionError
from voxflow.session.events import ClientEvent
from voxflow.session.options import StartOptions
from voxflow.transports.deepgram.errors import http_error
from voxflow.transports.deepgram.protocol import SPEAK_MAX_CHARS, model_uuid
from voxflow.transports.deepgram.query import SpeakOptions, parse_speak_query
from voxflow.transports.http_response import speak_request
from voxflow.transports.json_body import BodyError, RequestBody
from voxflow.transports.request_protocol import ErrorAnswer, Head, HttpPart, RequestProtocol

__all__ = ["SpeakAudio", "SpeakBody", "error_response", "new_request_id", "speak"]


class SpeakBody(RequestBody):
    """The request body: ``text`` only (types strict; a refused body is answered in Deepgram's
    shape, ``checked``)."""

    text: str = Field(min_length=1)


def new_request_id() -> str:
    """Deepgram's request ids are UUIDs; so are ours."""
    return str(uuid.uuid4())


def error_response(error: SessionError, request_id: str) -> JSONResponse:
    """``error`` as Deepgram's REST error object, with its request id in ``dg-request-id``."""
    answer = http_error(error.code, error.message, request_id)
    return JSONResponse(
        answer.body, status_code=answer.status, headers={"dg-request-id": request_id}
    )


class SpeakAudio(RequestProtocol):
    """The audio bytes, with Deepgram's ``dg-*`` headers on the head (on a refusal too)."""

    def __init__(
        self, media_type: str, request_id: str, headers: tuple[tuple[str, str], ...]
    ) -> None:
        super().__init__(media_type)
        self._request_id = request_id
        self._headers = headers

    def error(self, code: str, message: str) -> ErrorAnswer:
        answer = http_error(code, message, self._request_id)
        return ErrorAnswer.json(answer.status, answer.body)

    def reply(self, event: ClientEvent) -> Reply[HttpPart]:
        answer = super().reply(event)
        frames = [self._with_headers(part) for part in answer.frames]
        return Reply(frames, answer.close)

    def _with_headers(self, part: HttpPart) -> HttpPart:
        if isinstance(part, Head):
            return replace(part, headers=part.headers + self._headers)
        return part


def _text(body: SpeakBody) -> str:
    """The body's text; a refused body is a message the server cannot read (the query string's
    refusals are ``invalid_request``, which Deepgram names after its query parameters)."""
    try:
        return body.checked().text
    except BodyError as error:
        raise SessionError("invalid_message", error.message) from None


def dg_headers(request_id: str, speech: SpeakOptions, chars: int) -> tuple[tuple[str, str], ...]:
    """The ``dg-*`` headers Deepgram answers with (the model is the voxflow voice)."""
    return (
        ("dg-request-id", request_id),
        ("dg-model-name", speech.voice),
        ("dg-model-uuid", model_uuid(speech.voice)),
        ("dg-char-count", str(chars)),
    )


async def speak(gateway: Gateway, query: Mapping[str, str], body: SpeakBody) -> Response:
    """``POST /v1/speak``."""
    request_id = new_request_id()
    try:
        speech = parse_speak_query(gateway.context, query, websocket=False)
        if query.get("callback"):
            raise SessionError(
                "invalid_request", "callback is not supported: the audio is the response"
            )
        text = _text(body)
        options.check_text(text, min(SPEAK_MAX_CHARS, gateway.context.max_message_chars))
        text = options.clean_text(text)
    except SessionError as error:
        return error_response(error, request_id)
    start = StartOptions(
        voice=speech.voice,
        output_format=speech.output_format.name,
        settings=speech.settings,
        language=speech.language,
    )
    protocol = SpeakAudio(
        speech.output_format.media_type, request_id, dg_headers(request_id, speech, len(text))
    )
    return speak_request(gateway, "deepgram_http", start, text, protocol)
