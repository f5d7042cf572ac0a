"""Per-context event queues of the native WebSocket client: where parsed events wait to be taken.

``ContextRouter.route`` appends every event the reader parses to its context's queue (or, for
errors that belong to no context, to the connection's). ``events(context_id)`` iterates one
context's events and ends after its ``done`` or ``cancelled``; ``errors()`` iterates the
connection's errors.

A context id can be reused once its ``done``/``cancelled`` has arrived, so each context id holds a
series of *streams*, one per use: the router always appends to the current one and starts a new one
after a terminal event. A finished stream stays around until its terminal event has been taken, so
``events()`` may be called before, during or after the context runs and still sees all of it.

When the connection goes away (``close``) every iterator still waiting raises
``VoxflowConnectionError`` once the events that did arrive are taken; ``errors()`` just ends.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator

from voxflow.client.errors import VoxflowConnectionError
from voxflow.client.messages import CancelledEvent, DoneEvent, ErrorEvent, Event


class _Exhausted(Exception):
    """A stream's terminal event has been taken: nothing more will ever come out of it."""


class _Stream:
    """The events of one use of a context id (or the connection-level errors), in order."""

    def __init__(self) -> None:
        self._items: deque[Event] = deque()
        self._ready = asyncio.Event()
        self._closed: str | None = None
        self._terminal_pushed = False

    def push(self, event: Event) -> None:
        self._items.append(event)
        if isinstance(event, DoneEvent | CancelledEvent):
            self._terminal_pushed = True
        self._ready.set()

    def close(self, reason: str) -> None:
        if self._closed is None:
            self._closed = reason
            self._ready.set()

    def take_all(self) -> list[Event]:
        items = list(self._items)
        self._items.clear()
        return items

    async def get(self) -> Event:
        while not self._items:
            # Whoever took the terminal event (an iterator or pending()), the stream is over for
            # every reader: waiting on would hang, since a finished stream is never closed.
            if self._terminal_pushed:
                raise _Exhausted
            if self._closed is not None:
                raise VoxflowConnectionError(self._closed)
            self._ready.clear()
            await self._ready.wait()
        return self._items.popleft()


class _ContextEvents:
    """``events()``: a plain async iterator, not an async generator, so that leaving an
    ``async for`` early leaves no generator to be finalised by a task on the loop."""

    def __init__(self, router: ContextRouter, context_id: str, stream: _Stream) -> None:
        self._router = router
        self._context_id = context_id
        self._stream = stream
        self._ended = False

    def __aiter__(self) -> _ContextEvents:
        return self

    async def __anext__(self) -> Event:
        if self._ended:
            raise StopAsyncIteration
        try:
            event = await self._stream.get()
        except _Exhausted:
            self._ended = True
            raise StopAsyncIteration from None
        if isinstance(event, DoneEvent | CancelledEvent):
            self._ended = True
            self._router._taken_terminal(self._context_id, self._stream)
        return event


class _ConnectionErrors:
    def __init__(self, stream: _Stream) -> None:
        self._stream = stream

    def __aiter__(self) -> _ConnectionErrors:
        return self

    async def __anext__(self) -> ErrorEvent:
        try:
            event = await self._stream.get()
        except VoxflowConnectionError:
            raise StopAsyncIteration from None
        assert isinstance(event, ErrorEvent)  # only errors are routed here
        return event


class ContextRouter:
    """Every context's streams and the connection's errors, for one connection."""

    def __init__(self) -> None:
        self._live: dict[str, _Stream] = {}
        self._finished: dict[str, deque[_Stream]] = {}
        self._connection_errors = _Stream()
        self._close_reason: str | None = None

    def events(self, context_id: str) -> AsyncIterator[Event]:
        """The events of ``context_id``'s oldest unfinished use, ending after done/cancelled."""
        finished = self._finished.get(context_id)
        if finished:
            return _ContextEvents(self, context_id, finished[0])
        return _ContextEvents(self, context_id, self._live_stream(context_id))

    def pending(self, context_id: str) -> tuple[Event, ...]:
        """Take the events of ``context_id`` that have arrived and nobody has taken, at once."""
        taken: list[Event] = []
        for stream in list(self._finished.get(context_id, ())):
            taken.extend(stream.take_all())
            self._taken_terminal(context_id, stream)
        live = self._live.get(context_id)
        if live is not None:
            taken.extend(live.take_all())
        return tuple(taken)

    def errors(self) -> AsyncIterator[ErrorEvent]:
        """Errors about the connection rather than a context; ends when the connection does."""
        return _ConnectionErrors(self._connection_errors)

    def route(self, event: Event) -> None:
        """Queue one event the reader parsed."""
        if event.context_id is None:
            self._connection_errors.push(event)
            return
        stream = self._live_stream(event.context_id)
        stream.push(event)
        if isinstance(event, DoneEvent | CancelledEvent):
            # The id is free again on the server: its next events belong to a new stream.
            del self._live[event.context_id]
            self._finished.setdefault(event.context_id, deque()).append(stream)

    def close(self, reason: str) -> None:
        """The connection is gone: wake every waiting reader (idempotent; the first reason wins)."""
        if self._close_reason is not None:
            return
        self._close_reason = reason
        for stream in self._live.values():
            stream.close(reason)
        self._connection_errors.close(reason)

    def _live_stream(self, context_id: str) -> _Stream:
        stream = self._live.get(context_id)
        if stream is None:
            stream = self._live[context_id] = _Stream()
            # A context first asked for after the connection ended must not wait forever.
            if self._close_reason is not None:
                stream.close(self._close_reason)
        return stream

    def _taken_terminal(self, context_id: str, stream: _Stream) -> None:
        finished = self._finished.get(context_id)
        if finished is not None and stream in finished:
            finished.remove(stream)
            if not finished:
                del self._finished[context_id]
