"""The native protocol of ``WS /v1/stream`` (see docs/protocol.md), without I/O.

JSON messages in, session calls out; session events in, JSON frames out (or, with
``?audio=binary``, a JSON header followed by one binary frame of audio). A bad frame of any kind
gets an ``error`` event and the connection stays usable.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import asdict, replace
from typing import Any

from voxflow.connection.wire import Close, Reply
from voxflow.session.dictionaries import Dictionaries, no_dictionaries, parse_locators
from voxflow.session.errors import SHUTTING_DOWN, SessionError
from voxflow.session.events import (
    AudioOut,
    CancelledOut,
    ClientEvent,
    CloseOut,
    DoneOut,
    ErrorOut,
    TimestampsOut,
)
from voxflow.session.options import (
    StartOptions,
    check_name,
    clean_text,
    finite_number,
    normalization_mode,
    shown,
    text_format,
    voice_settings,
)
from voxflow.session.session import DEFAULT_CONTEXT, Session
from voxflow.text.lexicon import Lexicon, LexiconEntry
from voxflow.transports.close_codes import (
    FAILURE_CLOSE,
    NORMAL_CLOSURE,
    SERVICE_RESTART,
    STALL_CLOSE,
)
from voxflow.transports.json_body import decode_object, dump
from voxflow.transports.native import schema
from voxflow.transports.native.errors import error_body

__all__ = ["NativeProtocol", "encode_event", "parse_lexicon", "parse_start"]

MESSAGE_TYPES = ("start", "text", "flush", "end", "cancel", "prefetch", "settings")
# Refused context ids a connection remembers (a client that keeps starting refused contexts
# under new ids must not grow the connection's memory).
MAX_REFUSED = 64
MAX_LEXICON_ENTRIES = 1000


def _field(message: dict[str, Any], name: str, kind: type | tuple[type, ...]) -> Any:
    value = message.get(name)
    if value is None:
        return None
    # bool is an int in Python; a JSON true is not a number here.
    if isinstance(value, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,)):
        raise SessionError("invalid_message", f"{name!r} must not be a boolean")
    if not isinstance(value, kind):
        raise SessionError("invalid_message", f"{name!r} has the wrong type")
    return value


def parse_lexicon(raw: object) -> Lexicon | None:
    """Per-request pronunciations: ``[{"word": ..., "respelling": ...} | {"word": ...,
    "phonemes": ...}]``, which override the server's lexicon for this context."""
    if raw is None:
        return None
    if not isinstance(raw, list) or len(raw) > MAX_LEXICON_ENTRIES:
        raise SessionError(
            "invalid_message", f"lexicon must be a list of at most {MAX_LEXICON_ENTRIES} entries"
        )
    entries = []
    for item in raw:
        if not isinstance(item, dict) or not isinstance(item.get("word"), str):
            raise SessionError("invalid_message", "each lexicon entry needs a string 'word'")
        respelling, phonemes = item.get("respelling"), item.get("phonemes")
        if not isinstance(respelling, str | None) or not isinstance(phonemes, str | None):
            raise SessionError("invalid_message", "respelling and phonemes must be strings")
        # Pronunciations are spoken text: cleaned as the text is (``clean_text``).
        respelling = None if respelling is None else clean_text(respelling)
        phonemes = None if phonemes is None else clean_text(phonemes)
        try:
            entries.append(LexiconEntry(item["word"], respelling=respelling, phonemes=phonemes))
        except ValueError as error:
            raise SessionError("invalid_message", f"lexicon entry: {error}") from error
    return Lexicon(entries)


def parse_start(message: dict[str, Any]) -> StartOptions:
    """The options of a ``start`` message: field types here, values in
    ``voxflow.session.options``."""
    schedule = message.get("chunk_length_schedule")
    if schedule is not None and (
        not isinstance(schedule, list)
        or not schedule
        or not all(isinstance(v, int) and not isinstance(v, bool) for v in schedule)
    ):
        raise SessionError("invalid_message", "chunk_length_schedule must be a list of integers")
    speed = finite_number(message.get("speed"), "speed")
    settings = voice_settings(
        # 0 is a speed, and out of range: only an absent speed means the default.
        speed=1.0 if speed is None else speed,
        noise_scale=finite_number(message.get("noise_scale"), "noise_scale"),
        noise_w=finite_number(message.get("noise_w"), "noise_w"),
        seed=_field(message, "seed", int),
        speaker_id=_field(message, "speaker_id", int),
    )
    volume = finite_number(message.get("volume"), "volume")
    return StartOptions(
        voice=_field(message, "voice", str),
        normalization=normalization_mode(_field(message, "apply_text_normalization", str)),
        lexicon=parse_lexicon(message.get("lexicon")),
        output_format=_field(message, "output_format", str),
        settings=settings,
        chunk_length_schedule=None if schedule is None else tuple(schedule),
        auto_mode=_field(message, "auto_mode", bool),
        markup=text_format(_field(message, "text_format", str)),
        volume=1.0 if volume is None else volume,
        sentence_pause_ms=finite_number(message.get("sentence_pause_ms"), "sentence_pause_ms"),
        # Checked against the voice when the context opens (``options.check_language``).
        language=_field(message, "language", str),
    )


class NativeProtocol:
    """One native connection's protocol state (see ``voxflow.connection.wire.WireProtocol``)."""

    stall_close = STALL_CLOSE
    failure_close = FAILURE_CLOSE

    def __init__(
        self,
        session: Session,
        clock: Callable[[], float],
        binary: bool,
        dictionaries: Dictionaries = no_dictionaries,
    ) -> None:
        self._session = session
        self._clock = clock
        self._binary = binary
        # The lexicon of a context's pronunciation_dictionary_locators (the server's store, for
        # the connection's API key).
        self._dictionaries = dictionaries
        # Contexts whose ``start`` was refused, most recent last: their text is refused too,
        # rather than spoken by a context that ``text`` would open with the server's defaults
        # (another voice, another language). A later ``start`` of the id forgets the refusal.
        self._refused: OrderedDict[str, None] = OrderedDict()

    def receive(self, frame: str | bytes) -> None:
        """Apply one client frame to the session (errors become ``error`` events)."""
        received_at = self._clock()
        context_id: str | None = None
        try:
            if isinstance(frame, bytes):
                raise SessionError("invalid_message", "binary frames are not accepted from clients")
            message = decode_object(frame)
            raw_context = message.get("context_id")
            if raw_context is not None and (not isinstance(raw_context, str) or not raw_context):
                raise SessionError("invalid_message", "context_id must be a non-empty string")
            # Echoed in every reply of the context: short and printable, or refused.
            context_id = (
                None
                if raw_context is None
                else check_name(raw_context, "context_id", "invalid_message")
            )
            self._apply(message, context_id, received_at)
        except SessionError as error:
            self._session.error(context_id, error.code, error.message, error.retryable)

    def _with_dictionaries(self, message: dict[str, Any]) -> StartOptions:
        """A ``start``'s options, its pronunciation dictionaries' words under its own
        ``lexicon`` (which wins where both name a word)."""
        options = parse_start(message)
        locators = parse_locators(
            message.get("pronunciation_dictionary_locators"), "invalid_message"
        )
        words = self._dictionaries(locators)
        if words is None:
            return options
        return replace(
            options, lexicon=words if options.lexicon is None else words.merged(options.lexicon)
        )

    def _apply(self, message: dict[str, Any], context_id: str | None, received_at: float) -> None:
        now = self._clock()
        kind = message.get("type")
        session = self._session
        cid = context_id or DEFAULT_CONTEXT
        if kind == "start":
            self._refused.pop(cid, None)
            try:
                options = self._with_dictionaries(message)
            except SessionError:
                self._refuse(cid)
                raise
            if not session.start(context_id, options, now):
                self._refuse(cid)
        elif kind in ("text", "flush", "end") and cid in self._refused:
            raise SessionError(
                "unknown_context",
                f"context {cid!r} is not open: its start was refused (the error before this "
                "one says why); send a new start",
            )
        elif kind == "text":
            text = message.get("text")
            if not isinstance(text, str):
                raise SessionError("invalid_message", "text message needs a string 'text'")
            session.text(context_id, clean_text(text), now)
        elif kind == "flush":
            session.flush(context_id, now)
        elif kind == "end":
            session.end(context_id, now)
        elif kind == "prefetch":
            text = message.get("text")
            if not isinstance(text, str):
                raise SessionError("invalid_message", "prefetch message needs a string 'text'")
            session.prefetch(context_id, parse_start(message), clean_text(text), now)
        elif kind == "settings":
            session.delivery(
                context_id,
                now,
                speed=finite_number(message.get("speed"), "speed"),
                volume=finite_number(message.get("volume"), "volume"),
                sentence_pause_ms=finite_number(
                    message.get("sentence_pause_ms"), "sentence_pause_ms"
                ),
            )
        elif kind == "cancel":
            played_ms = finite_number(message.get("played_ms"), "played_ms")
            if played_ms is not None and played_ms < 0:
                raise SessionError("invalid_message", "played_ms must be >= 0")
            session.cancel(context_id, played_ms, now, received_at)
        else:
            raise SessionError(
                "unknown_type",
                f"unknown message type {shown(kind)}; expected one of {MESSAGE_TYPES}",
            )

    def _refuse(self, cid: str) -> None:
        self._refused[cid] = None
        while len(self._refused) > MAX_REFUSED:
            self._refused.popitem(last=False)

    def reply(self, event: ClientEvent) -> Reply[str | bytes]:
        if isinstance(event, CloseOut):
            return Reply((), Close(NORMAL_CLOSURE, event.reason))
        text, extra = encode_event(event, self._binary)
        return Reply((text,) if extra is None else (text, extra))

    def peer_gone(self) -> bool:
        return True

    def deadline(self) -> float | None:
        return None

    def expire(self) -> None:
        raise AssertionError("the native protocol sets no deadline")

    def shutdown(self) -> Reply[str | bytes]:
        """An ``error`` (``shutting_down``, retryable), then close 1012 (service restart)."""
        error = ErrorOut(None, "shutting_down", SHUTTING_DOWN, retryable=True)
        return Reply([dump(error_body(error))], Close(SERVICE_RESTART, "shutting down"))


def encode_event(event: ClientEvent, binary: bool) -> tuple[str, bytes | None]:
    """The JSON text frame for ``event`` and, in binary mode, the audio frame that follows it
    (the fields: ``voxflow.transports.native.schema``)."""
    extra: bytes | None = None
    if isinstance(event, AudioOut):
        body = schema.AUDIO.encode(event)
        extra = schema.encode_audio(body, event.data, binary)
    elif isinstance(event, TimestampsOut):
        body = schema.TIMESTAMPS.encode(event)
    elif isinstance(event, DoneOut):
        metrics = {**asdict(event.metrics), "cached": event.metrics.first_cached}
        body = schema.DONE.encode({"context_id": event.context_id, "metrics": metrics})
    elif isinstance(event, CancelledOut):
        body = schema.CANCELLED.encode(event)
    elif isinstance(event, ErrorOut):
        body = error_body(event)
    else:
        raise TypeError(f"no wire form for {event!r}")
    return dump(body), extra
