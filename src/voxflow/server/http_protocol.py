"""uvicorn's HTTP/1.1 protocol (httptools), with what ASGI lacks: a way to abort, and limits.

An answer that must end early (the client stopped reading, or a failure after the head was sent)
has to drop the connection. ASGI can only return without finishing the body, and uvicorn then
*closes* the transport, which waits for the unsent bytes to drain: a client that reads nothing
would hold its socket forever. So each request's scope carries the connection's ``abort``
(``transports.abort``), and the HTTP adapter calls it.

uvicorn bounds nothing before the app runs: a client may take forever over its request head or
body, send an endless head, announce any body size, and open sockets until the process runs out
of file descriptors. ``LimitedHttpProtocol`` (one class per server, from ``limited_protocol``)
enforces ``server.limits.HttpLimits`` on the connection itself, before and while the app reads:

* the request head (line and headers) must arrive within ``header_timeout_s`` of its first byte
  (of the connection, for a first request): else 408, or a plain close when nothing was sent;
* the head may be at most ``max_header_bytes`` (431), the body at most ``max_body_bytes`` (413,
  from Content-Length before any of the body is read, or as soon as a chunked body passes it);
* the whole body must arrive within ``body_timeout_s`` of the end of the head (408): a deadline,
  not a progress check, so a client trickling a byte at a time holds a connection for a bounded
  time whatever its pace;
* past ``max_connections`` open connections (WebSockets included) an idle keep-alive connection
  is closed to make room; failing that, the new connection may only ask for a health path
  (others get 503), up to ``health_reserve`` more; past those the reserve connection that has
  waited longest for its head gives way, or the new one is closed at once.

Refusals are written straight to the socket (the app never sees the request, or sees it end as a
disconnect), then the connection is half-closed and drained for ``linger_s`` so that a client
still sending its body reads the answer rather than a reset.
"""

from __future__ import annotations

import json
import logging
from asyncio import TimerHandle, Transport
from collections.abc import Callable
from typing import ClassVar

import httptools
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

from voxflow.server.limits import ConnectionGate, HttpLimits
from voxflow.transports.abort import ABORT_EXTENSION

__all__ = ["AbortableHttpProtocol", "LimitedHttpProtocol", "limited_protocol"]

log = logging.getLogger(__name__)


class AbortableHttpProtocol(HttpToolsProtocol):
    def on_message_begin(self) -> None:
        super().on_message_begin()
        self.scope["extensions"] = {ABORT_EXTENSION: {"abort": self.transport.abort}}


def limited_protocol(
    limits: HttpLimits, on_refused: Callable[[str], None] = lambda _reason: None
) -> type[LimitedHttpProtocol]:
    """A protocol class for one server: its limits, and its own gate (the cap's bookkeeping),
    which reports each refusal's reason to ``on_refused``."""
    gate = ConnectionGate(on_refused)
    attributes = {"limits": limits, "gate": gate, "__module__": __name__}
    return type("LimitedHttpProtocol", (LimitedHttpProtocol,), attributes)


class LimitedHttpProtocol(AbortableHttpProtocol):
    """The limits of the module docstring; use the class ``limited_protocol`` builds, which
    carries a server's ``limits`` and ``gate``."""

    limits: ClassVar[HttpLimits]
    gate: ClassVar[ConnectionGate]

    _head_timer: TimerHandle | None = None
    _body_timer: TimerHandle | None = None
    _in_message = False  # from a request's first byte to the end of its body
    _reserved = False  # let in past the cap: health paths only, no keep-alive
    _refused = False  # answered by a refusal: what the client still sends is dropped
    _head_bytes = 0
    _body_bytes = 0

    def connection_made(self, transport: Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.timeout_keep_alive = self.limits.keepalive_timeout_s  # type: ignore[assignment]
        limits, gate = self.limits, self.gate
        count = len(self.connections)  # this server's HTTP and WebSocket connections, this one too
        if count <= limits.max_connections:
            gate.admitted()
        elif not gate.evict_idle():
            # Past the cap, health paths only. A reserve connection waits for its head in line:
            # a newcomer past the reserve pushes out the one that has waited longest, so silent
            # sockets cannot keep a health check out for longer than it takes to send one.
            gate.refusal(count, limits.max_connections)
            beyond_reserve = count > limits.max_connections + limits.health_reserve
            if beyond_reserve and not gate.evict_waiting():
                self._refused = True
                transport.close()
                return
            self._reserved = True
            gate.waiting[self] = None
        self._arm_head_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_timers()
        self.gate.forget(self)
        super().connection_lost(exc)

    def evict(self) -> None:
        log.debug("closing %s to make room for a new connection", self.client)
        self._stop_timers()
        self._refused = True
        self.transport.close()

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return  # lingering after a refusal: read and drop
        self.gate.idle.pop(self, None)
        if not self._in_message:
            # Between requests any byte starts the head's clock: a client sending empty lines
            # (which the parser skips without starting a request) must not reset the idle timer.
            self._arm_head_timer()
        super().data_received(data)

    def on_message_begin(self) -> None:
        if self._refused:
            return  # a request pipelined behind a refused one: never served
        super().on_message_begin()
        self._in_message = True
        self._head_bytes = self._body_bytes = 0
        self._arm_head_timer()

    def on_url(self, url: bytes) -> None:
        if self._count_head(len(url)):
            super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        if self._count_head(len(name) + len(value)):
            super().on_header(name, value)

    def on_headers_complete(self) -> None:
        if self._refused:
            return
        self._cancel_head_timer()
        upgrade = self.parser.should_upgrade() and self._should_upgrade()
        if self._reserved:
            path = httptools.parse_url(self.url).path.decode("ascii", "replace")
            if upgrade or path not in self.limits.reserved_paths:
                self._refuse(
                    503, "the server is at its connection limit", "connection_cap", retry=True
                )
                return
            self.gate.waiting.pop(self, None)
        length = self._content_length()
        if length is not None and length > self.limits.max_body_bytes:
            self._refuse(
                413, f"the request body is over {self.limits.max_body_bytes} bytes", "body_size"
            )
            return
        super().on_headers_complete()
        if upgrade:
            return  # handed to the WebSocket protocol once the parser stops
        if self._reserved:
            self.cycle.keep_alive = False  # a reserve slot serves one request, then frees up
        self._body_timer = self.loop.call_later(self.limits.body_timeout_s, self._body_timed_out)

    def on_body(self, body: bytes) -> None:
        if self._refused:
            return
        self._body_bytes += len(body)
        if self._body_bytes > self.limits.max_body_bytes:
            self._refuse(
                413, f"the request body is over {self.limits.max_body_bytes} bytes", "body_size"
            )
            return
        super().on_body(body)

    def on_message_complete(self) -> None:
        self._in_message = False
        self._cancel_body_timer()
        if not self._refused:
            super().on_message_complete()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self.timeout_keep_alive_task is not None:  # idle now, until the next request
            self.gate.idle[self] = None

    def handle_websocket_upgrade(self) -> None:
        if self._refused:
            return
        self._stop_timers()
        self.gate.forget(self)  # the WebSocket protocol takes the connection over
        super().handle_websocket_upgrade()

    def send_400_response(self, msg: str) -> None:
        if self._refused:
            return  # the parser choked on what followed a refusal: already answered
        self._stop_timers()
        self._refused = True
        super().send_400_response(msg)

    # -- timers

    def _arm_head_timer(self) -> None:
        if self._head_timer is None:
            self._head_timer = self.loop.call_later(
                self.limits.header_timeout_s, self._head_timed_out
            )

    def _cancel_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _cancel_body_timer(self) -> None:
        if self._body_timer is not None:
            self._body_timer.cancel()
            self._body_timer = None

    def _stop_timers(self) -> None:
        self._cancel_head_timer()
        self._cancel_body_timer()
        self._unset_keepalive_if_required()

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if self.transport.is_closing():
            return
        if self.cycle is not None and not self.cycle.response_complete:
            # The next request's head is due once this answer is out (pipelining, or a stray
            # byte): look again then, rather than cut the answer.
            self._arm_head_timer()
            return
        log.debug("%s: no request head within %.1f s", self.client, self.limits.header_timeout_s)
        # Nothing sent (an idle socket): close. Part of a head: tell the client why.
        status = 408 if self._in_message else None
        self._refuse(
            status, f"the request head took over {self.limits.header_timeout_s} s", "head_timeout"
        )

    def _body_timed_out(self) -> None:
        self._body_timer = None
        if self.transport.is_closing():
            return
        log.debug("%s: request body not in within %.1f s", self.client, self.limits.body_timeout_s)
        if self.cycle.response_complete:
            # Answered without the body (an error, say): the rest is not worth waiting for.
            self._stop_timers()
            self._refused = True
            self.transport.close()
            return
        self._refuse(
            408, f"the request body took over {self.limits.body_timeout_s} s", "body_timeout"
        )

    # -- refusals

    def _count_head(self, size: int) -> bool:
        """Whether the head is still within its limit (refused when it is not)."""
        if self._refused:
            return False
        self._head_bytes += size
        if self._head_bytes > self.limits.max_header_bytes:
            self._refuse(
                431, f"the request head is over {self.limits.max_header_bytes} bytes", "head_size"
            )
            return False
        return True

    def _content_length(self) -> int | None:
        for name, value in self.headers:
            if name == b"content-length":
                try:
                    return int(value)
                except ValueError:
                    return None  # the parser rejects it
        return None

    def _refuse(self, status: int | None, detail: str, reason: str, retry: bool = False) -> None:
        """End the connection with ``status`` (None: no answer) where an answer can still go out;
        ``reason`` labels it in the metrics."""
        if self._refused:
            return
        self._refused = True
        self.gate.on_refused(reason)
        self._stop_timers()
        self.gate.forget(self)
        cycle = self.cycle
        if cycle is not None and cycle.response_started and not cycle.response_complete:
            self.transport.abort()  # an answer is under way: nothing else can be said
            return
        if cycle is not None and not cycle.response_complete:
            # The app is reading this request: it sees a disconnect, and what it sends is dropped.
            cycle.disconnected = True
            cycle.message_event.set()
        if status is None:
            self.transport.close()
            return
        self.transport.write(self._answer(status, detail, retry))
        if self.transport.can_write_eof():
            self.transport.write_eof()
        self.flow.resume_reading()  # drain what the client still sends, if uvicorn paused it
        self.loop.call_later(self.limits.linger_s, self._end_linger)

    def _answer(self, status: int, detail: str, retry: bool) -> bytes:
        body = json.dumps({"detail": detail}, allow_nan=False).encode()
        headers = [
            *self.server_state.default_headers,
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"connection", b"close"),
        ]
        if retry:
            headers.append((b"retry-after", b"1"))
        head = b"".join(name + b": " + value + b"\r\n" for name, value in headers)
        return STATUS_LINE[status] + head + b"\r\n" + body

    def _end_linger(self) -> None:
        if not self.transport.is_closing():
            self.transport.abort()
