"""One error model for every protocol: ``SessionError(code, message, retryable)`` and its codes.

Whatever the protocol, a request the server refuses or cannot finish is a ``SessionError`` (raised
while a frame or request is decoded and its options validated) or an ``ErrorOut`` (the session's
event for the same thing), with one of the codes in ``CODES``. A code says what went wrong, not
how a protocol spells it: each protocol has one table from these codes to its wire shape
(``transports/native/errors.py``, ``transports/elevenlabs/errors.py``,
``transports/openai/errors.py``, the Wyoming ``error`` event). ElevenLabs, for one, spells
``unknown_voice`` ``voice_not_found`` and answers it with HTTP 404; the native protocol folds the
option codes into its documented ``invalid_message``.

A new code goes here first, with what it means and whether the same request may succeed later;
``tests/session/test_errors.py`` fails on a code raised anywhere in ``src`` that is missing here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

__all__ = ["CODES", "SHUTTING_DOWN", "ErrorCode", "SessionError", "is_retryable", "is_server_fault"]


@dataclass(frozen=True)
class ErrorCode:
    meaning: str
    # The same request, unchanged, may succeed later (a limit, a transient failure). A raise may
    # say otherwise for one instance (``text_too_long`` of a full buffer is retryable).
    retryable: bool = False
    # The server failed, not the client: HTTP 5xx, WebSocket close 1011.
    server_fault: bool = False


CODES: Mapping[str, ErrorCode] = MappingProxyType(
    {
        # -- a frame or request that cannot be read ------------------------------------------------
        "invalid_json": ErrorCode(
            "a frame or request body that is not JSON (NaN, Infinity and numbers too large for a "
            "float included), not UTF-8 or nested too deeply"
        ),
        "invalid_message": ErrorCode(
            "a message that is not an object, a field of the wrong type or out of range, a lone "
            "UTF-16 surrogate, a name with control characters, a binary frame"
        ),
        "invalid_event": ErrorCode("a malformed Wyoming event"),
        "invalid_request": ErrorCode(
            "a malformed or out-of-range request parameter (query string, HTTP field)"
        ),
        "unknown_type": ErrorCode("a native message whose type is none of the protocol's"),
        "invalid_page_size": ErrorCode("a voice listing's page_size out of range"),
        "invalid_page_token": ErrorCode("a voice listing's next_page_token that is not one"),
        # -- options (voxflow.session.options) -----------------------------------------------------
        "unknown_voice": ErrorCode("the voice names no voice the server has"),
        "unknown_speaker": ErrorCode("the speaker is not one of the voice's speakers"),
        "unsupported_voice": ErrorCode("a voice the protocol cannot stream (its sample rate)"),
        "invalid_language": ErrorCode(
            "a language that is not a language code (ja, en, en-US, en_GB)"
        ),
        "unsupported_language": ErrorCode(
            "a language the voice does not speak, or one no voice speaks where the protocol "
            "picks the voice by language (Wyoming, a Deepgram Aura model name)"
        ),
        "unsupported_format": ErrorCode("an output format the server cannot produce"),
        "unsupported_text_format": ErrorCode("text the server cannot read as plain text (SSML)"),
        "invalid_ssml": ErrorCode(
            "malformed SSML, or an element whose content cannot be read (a say-as date that is "
            "no date); nothing of that message is taken, the rest of the context goes on"
        ),
        "invalid_voice_settings": ErrorCode("speed, noise, seed or speaker id out of range"),
        "invalid_normalization": ErrorCode("a text normalization mode other than auto, on, off"),
        "invalid_chunk_length_schedule": ErrorCode("a chunk length schedule out of range"),
        # -- text and limits -----------------------------------------------------------------------
        "text_too_long": ErrorCode(
            "a text over the message limit, or a context buffering too much unsynthesized text "
            "(retryable: flush first)"
        ),
        "too_many_contexts": ErrorCode("more contexts open than the connection allows", True),
        "input_timeout_exceeded": ErrorCode("no message within the connection's timeout"),
        # -- context state -------------------------------------------------------------------------
        "unknown_context": ErrorCode("a call for a context that is not open"),
        "context_exists": ErrorCode("opening a context that is already open"),
        "context_ending": ErrorCode("text for a context after its end"),
        "context_closing": ErrorCode("reusing a context id before its last audio is out"),
        "no_stream": ErrorCode("a Wyoming chunk or stop without synthesize-start"),
        "stream_open": ErrorCode("a Wyoming synthesize-start while a stream is open"),
        # -- the server failed ---------------------------------------------------------------------
        "synthesis_failed": ErrorCode(
            "the engine failed on one segment; the context goes on", True, server_fault=True
        ),
        "encoding_failed": ErrorCode(
            "the encoder failed; the context's audio cannot go on", server_fault=True
        ),
        "service_unavailable": ErrorCode("the server is still starting", True, server_fault=True),
        # -- the server is full or leaving (retryable: later, or on another replica) ---------------
        "concurrency_limited": ErrorCode(
            "the server is at its cap of active streams; retry after retry_after_ms", True
        ),
        "shutting_down": ErrorCode("the server is shutting down; retry on another replica", True),
        # -- the phrase cache (runtime/cache/, POST /v1/cache/prefetch) -------------------------
        "cache_disabled": ErrorCode("a prefetch on a server without a phrase cache"),
        "prefetch_queue_full": ErrorCode("too many prefetches are waiting to be rendered", True),
        "prefetch_timeout": ErrorCode(
            "a waiting prefetch that was not rendered in time (its rendering goes on)", True
        ),
        # -- access control (server/security.py), answered before any protocol runs ----------------
        "unauthorized": ErrorCode("no API key, or a key the server does not have (--api-key)"),
        "forbidden_origin": ErrorCode(
            "a request or WebSocket from a web page of an origin not allowed (--allowed-origin)"
        ),
        "forbidden_host": ErrorCode(
            "a Host header the server does not answer to (DNS rebinding; --allowed-host)"
        ),
        # -- pronunciation dictionaries (session/dictionaries.py) --------------------------------
        "unknown_dictionary": ErrorCode(
            "a pronunciation dictionary or version id the caller's API key does not have"
        ),
        "invalid_dictionary": ErrorCode(
            "a PLS file or rule list that cannot be read or spoken (the message says why)"
        ),
        "dictionary_limit": ErrorCode(
            "more dictionaries, versions or rules than the server keeps for one API key"
        ),
        "dictionaries_disabled": ErrorCode(
            "a dictionary request to a server started without --dictionaries-dir"
        ),
    }
)


# The error a connection still open when the drain time is over gets, in its protocol's shape.
SHUTTING_DOWN = "the server is shutting down; reconnect (to another replica) and retry"


def is_retryable(code: str) -> bool:
    """The code's default retryable flag (an unknown code is not retryable)."""
    known = CODES.get(code)
    return known is not None and known.retryable


def is_server_fault(code: str) -> bool:
    """Whether the server, not the client, is at fault (an unknown code is the client's)."""
    known = CODES.get(code)
    return known is not None and known.server_fault


class SessionError(Exception):
    """A request the server refuses or cannot finish; each protocol renders it in its own shape.

    ``retryable`` defaults to the code's (``CODES``).
    """

    def __init__(
        self,
        code: str,
        message: str,
        retryable: bool | None = None,
        retry_after_ms: float | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.retryable = is_retryable(code) if retryable is None else retryable
        self.retry_after_ms = retry_after_ms  # when a retry may succeed (a full server)

    def __repr__(self) -> str:
        return f"SessionError({self.code!r}, {self.message!r}, retryable={self.retryable})"
