"""The sans-I/O session: one client connection's contexts, as a state machine.

Calls come in (``start``, ``text``, ``flush``, ``end``, ``cancel`` from the client;
``synthesis_event`` and ``encoded`` from the runtime; ``poll`` from a timer) and outputs pile up
in order, to be taken with ``drain()``: client events (``AudioOut``, ``TimestampsOut``,
``DoneOut``, ``CancelledOut``, ``ErrorOut``) and runtime commands (``OpenStream``,
``SubmitSegment``, ``CloseStream``, ``CancelStream``, ``EncodeAudio``). The session does no I/O,
starts no threads, reads no clock (``now`` is passed in) and encodes no audio (it hands the
encoder steps out, ``voxflow.session.encoding``).

Guarantees the transports rely on:

* after ``CancelledOut`` for a context, no ``AudioOut`` of that context is ever output (results of
  its stream are recognised by the stream's serial and dropped);
* bad input (unknown context, voice or format, text too long, text after ``end``) produces an
  ``ErrorOut`` and changes nothing else;
* a context id is free for reuse as soon as its ``DoneOut`` or ``CancelledOut`` is output.

Every call ends by calling ``on_output`` (when set): the driver sets it to carry the outputs out
at once, so a caller never pairs a session call with a dispatch by hand. Tests leave it unset and
take the outputs with ``drain()``.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import logging
import math
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Concatenate, ParamSpec, TypeVar, cast

from voxflow.runtime.jobs import (
    Drained,
    Failed,
    Prepared,
    Rendered,
    SchedulerEvent,
    SegmentRequest,
    Skipped,
)
from voxflow.session.admission import Admission, Ticket, stream_slots
from voxflow.session.context import Context, ContextOptions, ContextState
from voxflow.session.encoding import Encoded, EncodeJob
from voxflow.session.errors import SessionError
from voxflow.session.events import (
    CancelledOut,
    CancelStream,
    CloseOut,
    CloseStream,
    DoneOut,
    EncodeAudio,
    ErrorOut,
    OpenStream,
    Output,
    PrefetchSegment,
    SubmitSegment,
)
from voxflow.session.markup import Markup
from voxflow.session.options import (
    SessionConfig,
    StartOptions,
    VoiceLookup,
    check_pause,
    check_text,
    check_volume,
    clean_text,
    context_options,
    voice_settings,
)
from voxflow.text.language import locale_matches, parse_locale
from voxflow.text.ssml import SsmlError

log = logging.getLogger(__name__)

__all__ = ["DEFAULT_CONTEXT", "Session"]

DEFAULT_CONTEXT = "default"


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _notifies(
    method: Callable[Concatenate[Session, _P], _R],
) -> Callable[Concatenate[Session, _P], _R]:
    """Call ``on_output`` after ``method``, however it ends."""

    @functools.wraps(method)
    def call(self: Session, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return method(self, *args, **kwargs)
        finally:
            self._refresh_tickets()
            if self.on_output is not None:
                self.on_output()

    return cast("Callable[Concatenate[Session, _P], _R]", call)


class Session:
    def __init__(
        self, config: SessionConfig, voices: VoiceLookup, admission: Admission | None = None
    ) -> None:
        self._config = config
        self._voices = voices
        # The server-wide cap on streams: each context holds a slot from open to end (None: no
        # cap, as for ``voxflow say``).
        self._admission = admission
        self._contexts: dict[str, Context] = {}
        self._by_serial: dict[int, Context] = {}
        self._tickets: dict[int, Ticket] = {}  # each context's admission, by serial
        # Ended contexts whose listener may still be hearing them, by id: their tickets count
        # until then (``Admission.release``), unless the client says it stopped (``stop_hearing``)
        # or opens another context (at most ``max_contexts`` of them, then).
        self._heard: dict[str, Ticket] = {}
        self._serials = itertools.count(1)
        self._outputs: list[Output] = []
        self.closed = False
        self.on_output: Callable[[], None] | None = None

    # -- client calls ------------------------------------------------------------------------------

    @_notifies
    def start(self, context_id: str | None, options: StartOptions, now: float) -> bool:
        """Open a context; False when it was refused (its error is among the outputs)."""
        cid = context_id or DEFAULT_CONTEXT
        with self._errors(cid):
            if cid in self._contexts:
                raise SessionError("context_exists", f"context {cid!r} is already open")
            self._open(cid, options, now)
            return True
        return False

    @_notifies
    def request(self, context_id: str, options: StartOptions, text: str, now: float) -> None:
        """A whole-text request (an HTTP request): open, all the text, end, in one call. A
        request refused at any step gets that one error, and nothing of it stays open."""
        with self._errors(context_id):
            check_text(text, self._config.max_message_chars)
            text = clean_text(text)  # protocols clean already; say and the Python API do not
            if context_id in self._contexts:
                raise SessionError("context_exists", f"context {context_id!r} is already open")
            if options.markup is not None:
                _check_markup(options, text, self._config)  # refused whole, before it opens
            context = self._open(context_id, options, now)
            self._submit(context, context.add_text(text, now), now)
            self._submit(context, context.end_markup(now), now)
            self._submit(context, context.flush(now), now)
            context.state = ContextState.ENDING
            self._outputs.append(CloseStream(context.serial))

    @_notifies
    def prefetch(self, context_id: str | None, options: StartOptions, text: str, now: float) -> int:
        """Have ``text`` rendered into the phrase cache, cut into the engine requests that a
        whole-text request with ``options`` would make, so that a later request of it is a hit.
        No context is opened and no stream slot is taken; errors name ``context_id``. Returns
        how many requests went out (0 when refused)."""
        with self._errors(context_id):
            if not self._config.phrase_cache:
                raise SessionError("cache_disabled", "this server has no phrase cache")
            check_text(text, self._config.max_message_chars)
            resolved = context_options(self._config, options, self._voices)
            text = clean_text(text)
            if options.markup is not None:
                _check_markup(options, text, self._config)
            # A context of its own that nothing else sees: serial 0 is never a stream's.
            context = Context(context_id or DEFAULT_CONTEXT, 0, resolved, now)
            requests = context.add_text(text, now) + context.end_markup(now) + context.flush(now)
            self._outputs.extend(PrefetchSegment(request) for request in requests)
            return len(requests)
        return 0

    @_notifies
    def text(self, context_id: str | None, text: str, now: float) -> None:
        cid = context_id or DEFAULT_CONTEXT
        with self._errors(cid):
            check_text(text, self._config.max_message_chars)
            text = clean_text(text)  # protocols clean already; say and the Python API do not
            context = self._contexts.get(cid) or self._open(cid, StartOptions(), now)
            if context.state is not ContextState.OPEN:
                raise SessionError("context_ending", f"context {cid!r} has ended; no more text")
            if len(context.buffer.buffered) + len(text) > self._config.max_buffered_chars:
                raise SessionError(
                    "text_too_long",
                    f"context {cid!r} would buffer more than {self._config.max_buffered_chars} "
                    "characters; send flush or end first",
                    retryable=True,
                )
            with _markup_errors():
                self._submit(context, context.add_text(text, now), now)

    @_notifies
    def delivery(
        self,
        context_id: str | None,
        now: float,
        speed: float | None = None,
        volume: float | None = None,
        sentence_pause_ms: float | None = None,
    ) -> None:
        """Change an open context's speed, volume or pause after a sentence, for the text that
        follows (``Context.set_delivery``)."""
        cid = context_id or DEFAULT_CONTEXT
        with self._errors(cid):
            context = self._get(cid)
            if context.state is not ContextState.OPEN:
                raise SessionError("context_ending", f"context {cid!r} has ended")
            if speed is not None:
                speed = voice_settings(speed=speed).speed
            if volume is not None:
                volume = check_volume(volume)
            pause = check_pause(sentence_pause_ms)
            self._submit(context, context.set_delivery(now, speed, volume, pause), now)

    @_notifies
    def flush(self, context_id: str | None, now: float) -> None:
        cid = context_id or DEFAULT_CONTEXT
        with self._errors(cid):
            context = self._get(cid)
            if context.state is ContextState.OPEN:
                self._submit(context, context.flush(now), now)

    @_notifies
    def end(self, context_id: str | None, now: float) -> None:
        cid = context_id or DEFAULT_CONTEXT
        with self._errors(cid):
            context = self._get(cid)
            if context.state is not ContextState.OPEN:
                return  # ending already
            try:
                self._submit(context, context.end_markup(now), now)
            except SsmlError as error:  # reported, and the context ends all the same
                self._outputs.append(ErrorOut(cid, "invalid_ssml", str(error)))
            self._submit(context, context.flush(now), now)
            context.state = ContextState.ENDING
            self._outputs.append(CloseStream(context.serial))

    @_notifies
    def cancel(
        self, context_id: str | None, played_ms: float | None, now: float, received_at: float
    ) -> None:
        cid = context_id or DEFAULT_CONTEXT
        with self._errors(cid):
            if played_ms is not None and not 0 <= played_ms < math.inf:  # NaN fails too
                raise SessionError("invalid_message", "played_ms must be a finite number >= 0")
            if cid not in self._contexts:
                self.stop_hearing(cid)  # a barge-in after it ended: still an unknown context
            context = self._get(cid)
            self._forget(context)
            self._outputs.append(CancelStream(context.serial))
            heard_ms = context.audio_ms if played_ms is None else min(played_ms, context.audio_ms)
            self._outputs.append(
                CancelledOut(
                    cid,
                    spoken_text=context.spoken_text(heard_ms),
                    played_ms=heard_ms,
                    latency_ms=max(0.0, 1000.0 * (now - received_at)),
                    requested_at=received_at,
                )
            )

    def stop_hearing(self, context_id: str | None = None) -> None:
        """The client stopped playing ``context_id``, which has ended (a barge-in after its last
        audio went out): admission stops counting it. None: every ended context of the
        session (a client that clears all it was playing)."""
        if self._admission is None:
            return
        ids = list(self._heard) if context_id is None else [context_id]
        for cid in ids:
            ticket = self._heard.pop(cid, None)
            if ticket is not None:
                self._admission.not_heard(ticket)

    @_notifies
    def error(
        self, context_id: str | None, code: str, message: str, retryable: bool = False
    ) -> None:
        """Report a transport-level problem (malformed JSON, unknown type) in order."""
        self._outputs.append(ErrorOut(context_id, code, message, retryable))

    @_notifies
    def request_close(self, reason: str) -> None:
        """Ask the transport to close the connection after the events output so far."""
        self._outputs.append(CloseOut(reason))

    @_notifies
    def close(self) -> None:
        """The client is gone: stop every context's work."""
        for context in list(self._contexts.values()):
            self._forget(context)
            self._outputs.append(CancelStream(context.serial))
        self.stop_hearing()  # nobody listens to this connection any more
        self.closed = True

    # -- runtime calls -----------------------------------------------------------------------------

    @_notifies
    def synthesis_event(self, serial: int, event: SchedulerEvent, now: float) -> None:
        context = self._by_serial.get(serial)
        if context is None:
            return  # cancelled or closed: its late results are dropped here
        if isinstance(event, Prepared):
            context.prepared(event)
        elif isinstance(event, Rendered):
            self._encode(context, context.rendered(event))
        elif isinstance(event, Skipped):
            context.skipped(event.tag)
        elif isinstance(event, Failed):
            context.segment_failed(event.tag)
            self._outputs.append(
                ErrorOut(context.id, "synthesis_failed", f"synthesis failed: {event.error}", True)
            )
        elif isinstance(event, Drained):
            # Done once its last encoder step is back (``encoded``); until then it takes no text.
            self._encode(context, [context.finish()])

    @_notifies
    def encoded(self, serial: int, result: Encoded, now: float) -> None:
        """The result of the oldest ``EncodeAudio`` of stream ``serial`` still outstanding."""
        context = self._by_serial.get(serial)
        if context is None:
            return  # cancelled or closed: its late results are dropped here
        events, finished = context.encoded(result, now)
        self._outputs.extend(events)
        if finished:
            # Its listener goes on hearing it: admission counts it until then.
            self._forget(context, context.listener.runs_out_at())
            self._outputs.append(DoneOut(context.id, context.metrics()))

    @_notifies
    def encode_failed(self, serial: int, message: str) -> None:
        """An ``EncodeAudio`` job of stream ``serial`` raised: the context's audio cannot go on."""
        context = self._by_serial.get(serial)
        if context is None:
            return
        self._forget(context)
        self._outputs.append(CancelStream(context.serial))
        self._outputs.append(ErrorOut(context.id, "encoding_failed", f"encoding failed: {message}"))

    @_notifies
    def poll(self, now: float) -> None:
        """What the clock makes due in each context: idle flushes, sentences whose look-ahead
        expired, and leads cut for listeners about to run out (``Context.poll``)."""
        for context in list(self._contexts.values()):
            if context.state is ContextState.OPEN:
                self._submit(context, context.poll(now), now)

    def next_deadline(self) -> float | None:
        """When ``poll`` has something to do for some context (None: nothing for now)."""
        deadlines = [d for c in self._contexts.values() if (d := c.next_deadline()) is not None]
        return min(deadlines, default=None)

    def drain(self) -> list[Output]:
        outputs, self._outputs = self._outputs, []
        return outputs

    def written_text(self, context_id: str | None) -> str | None:
        """The text an open context has been sent, as its word timings index it (markup left
        out); None if it is not open."""
        context = self._contexts.get(context_id or DEFAULT_CONTEXT)
        return None if context is None else context.text

    @property
    def open_contexts(self) -> int:
        return len(self._contexts)

    # -- internals ---------------------------------------------------------------------------------

    def _open(self, cid: str, options: StartOptions, now: float) -> Context:
        if len(self._contexts) >= self._config.max_contexts:
            raise SessionError(
                "too_many_contexts",
                f"at most {self._config.max_contexts} contexts may be open at once",
            )
        resolved = context_options(self._config, options, self._voices)
        ticket = None
        if self._admission is not None:  # last: a refused option must not cost a slot
            # One listener per connection: what its ended contexts still have in its ears is
            # played before the new one's audio, or was cut off by the new turn.
            self.stop_hearing()
            resolved, ticket = self._admit(options, resolved, now)
        context = Context(cid, next(self._serials), resolved, now)
        self._contexts[cid] = context
        self._by_serial[context.serial] = context
        if ticket is not None:
            self._tickets[context.serial] = ticket
        self._outputs.append(
            OpenStream(
                context.serial,
                options.paced,
                resolved.output_format.decoder_read_s,
                resolved.voice,
                resolved.output_format.name,
            )
        )
        return context

    def _admit(
        self, options: StartOptions, resolved: ContextOptions, now: float
    ) -> tuple[ContextOptions, Ticket]:
        """Admit the stream (``Admission``); when a Kokoro stream finds no room and the server
        names a fallback voice, speak with that one instead (which is no refusal: the stream
        is served)."""
        admission = self._admission
        assert admission is not None
        engine = self._voices(resolved.voice).engine
        fallback = self._config.kokoro_fallback_voice
        if (
            fallback is not None
            and engine == "kokoro"
            and self._may_stand_in(fallback, resolved.voice, options.language)
            and not admission.fits(engine, self._slots_for(resolved.voice), now, options.paced)
        ):
            log.info("no room for a %s stream: speaking with %s", resolved.voice, fallback)
            resolved = context_options(self._config, replace(options, voice=fallback), self._voices)
            engine = self._voices(resolved.voice).engine
        slots = self._slots_for(resolved.voice)
        return resolved, admission.acquire(engine, slots, now, options.paced)

    def _may_stand_in(self, fallback: str, voice: str, language: str | None) -> bool:
        """Whether ``fallback`` may speak a stream of ``voice``: it speaks the voice's language
        (a Japanese stream read by an English voice would be gibberish, worse than a refusal)
        and the request's ``language`` when it names one (``check_language``)."""
        try:
            fallback_locale = self._voices(fallback).language
            spoken, _ = parse_locale(self._voices(voice).language)
            return locale_matches(spoken, fallback_locale) and (
                language is None or locale_matches(language, fallback_locale)
            )
        except (ValueError, KeyError):  # a locale that is no language code; no such voice
            return False

    def _slots_for(self, voice: str) -> int:
        """What a stream of ``voice`` holds of a count cap (``SessionConfig.kokoro_slots``)."""
        return stream_slots(self._voices(voice).engine, self._config.kokoro_slots)

    def _get(self, cid: str) -> Context:
        context = self._contexts.get(cid)
        if context is None:
            raise SessionError("unknown_context", f"no open context {cid!r}")
        return context

    def _forget(self, context: Context, heard_until: float | None = None) -> None:
        """Drop an ended context; ``heard_until``: when its listener will have heard all it
        said (None: it was cut off)."""
        self._contexts.pop(context.id, None)
        self._by_serial.pop(context.serial, None)
        ticket = self._tickets.pop(context.serial, None)
        if ticket is not None and self._admission is not None:
            self._admission.release(ticket, heard_until)
            if heard_until is not None:
                self._heard[context.id] = ticket

    def _refresh_tickets(self) -> None:
        """Tell admission when each context stops speaking (it may have changed)."""
        for serial, ticket in self._tickets.items():
            ticket.busy_until = self._by_serial[serial].busy_until()

    def _submit(self, context: Context, requests: list[SegmentRequest], now: float) -> None:
        if requests:
            context.owes_audio(now)
        self._outputs.extend(SubmitSegment(context.serial, request) for request in requests)

    def _encode(self, context: Context, jobs: list[EncodeJob]) -> None:
        self._outputs.extend(EncodeAudio(context.serial, job) for job in jobs)

    def _errors(self, cid: str | None) -> _ErrorCatcher:
        return _ErrorCatcher(self._outputs, cid)


def _check_markup(options: StartOptions, text: str, config: SessionConfig) -> None:
    """Refuse a whole text whose markup is bad (``invalid_ssml``)."""
    assert options.markup is not None
    markup = Markup(options.markup, config.normalizer)
    with _markup_errors():
        markup.feed(text)
        markup.end()


@contextlib.contextmanager
def _markup_errors() -> Iterator[None]:
    """Bad markup as the session's error (``invalid_ssml``)."""
    try:
        yield
    except SsmlError as error:
        raise SessionError("invalid_ssml", str(error)) from None


class _ErrorCatcher:
    """Turns a ``SessionError`` raised inside a client call into an ``ErrorOut``."""

    def __init__(self, outputs: list[Output], cid: str | None) -> None:
        self._outputs = outputs
        self._cid = cid

    def __enter__(self) -> None:
        return None

    def __exit__(self, exc_type: object, exc: BaseException | None, tb: object) -> bool:
        if isinstance(exc, SessionError):
            self._outputs.append(
                ErrorOut(self._cid, exc.code, exc.message, exc.retryable, exc.retry_after_ms)
            )
            return True
        return False
