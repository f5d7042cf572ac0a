"""The HTTP adapter: a Starlette response that serves one request's answer on the runner.

``RunnerResponse`` runs ``run_connection`` with a ``Transport`` over the ASGI ``receive`` and
``send`` of the request, so a streamed HTTP answer has the lifecycle of every connection: the write
timeout closes a client that stopped reading, a client that leaves stops the synthesis, and the
teardown is bounded. It moves the protocol's parts (``request_protocol``) and nothing else:

* ``receive`` waits for the client to leave (``http.disconnect``); the body was read before;
* ``send`` writes the head, then each body part as it comes (chunked, as it is rendered);
* ``close`` ends the body properly only for ``COMPLETE``. Any other close drops the connection
  mid-body, so the client sees a failed transfer, never a short file that looks whole. ASGI has
  no abort: voxflow's server puts the connection's ``abort`` in the scope (``transports.abort``).
  Without it (another server) the answer returns unfinished and the server closes the connection
  once its unsent bytes drain.

``speak_request`` is how every HTTP protocol answers: the request's whole text as one context of
a request driver, rendered as fast as the workers allow (no playback pacing), answered by the
protocol's ``RequestProtocol``. A request the session settles at once, opening no stream (refused:
the server is full or draining, or the options are), is answered from what its driver holds
already (``SettledResponse``), without the runner's tasks: a flood of requests past a full server
costs the event loop as little as it can.
"""

from __future__ import annotations

from dataclasses import replace

from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from voxflow.connection.driver import SessionDriver
from voxflow.connection.gateway import Gateway
from voxflow.connection.runner import RunnerSettings, run_connection
from voxflow.connection.wire import Close, PeerGone, Reply, Transport
from voxflow.session.options import StartOptions
from voxflow.transports.abort import scope_abort
from voxflow.transports.request_protocol import COMPLETE, Head, HttpPart, RequestProtocol

__all__ = ["RunnerResponse", "SettledResponse", "http_transport", "speak_request"]

_CONTEXT = "request"  # the one context of a request's driver


def http_transport(scope: Scope, receive: Receive, send: Send) -> Transport[bytes, HttpPart]:
    """The parts of one response to the request that ``receive`` reads."""
    abort = scope_abort(scope)

    async def receive_part() -> bytes | None:
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            # More of the request body: it was read whole before the response began.

    async def send_part(part: HttpPart) -> None:
        try:
            if isinstance(part, Head):
                headers = [(b"content-type", part.media_type.encode("latin-1"))]
                headers += [(k.encode("latin-1"), v.encode("latin-1")) for k, v in part.headers]
                await send(
                    {"type": "http.response.start", "status": part.status, "headers": headers}
                )
            else:
                await send({"type": "http.response.body", "body": part, "more_body": True})
        except OSError as error:
            raise PeerGone(str(error)) from error

    async def close(close: Close) -> None:
        if close != COMPLETE:
            if abort is not None:
                abort()
                # The server sees the connection lost on its next turn; waiting for that tells
                # it the answer was not left unfinished by mistake.
                await receive_part()
            return
        try:
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        except OSError as error:
            raise PeerGone(str(error)) from error

    return Transport(receive_part, send_part, close)


class RunnerResponse(Response):
    """The answer of ``protocol`` to a request whose context ``driver`` holds."""

    def __init__(
        self, driver: SessionDriver, protocol: RequestProtocol, settings: RunnerSettings
    ) -> None:
        super().__init__(media_type=protocol.media_type)
        self._driver = driver
        self._protocol = protocol
        self._settings = settings

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        transport = http_transport(scope, receive, send)
        await run_connection(self._driver, self._protocol, transport, self._settings)
        if self.background is not None:
            await self.background()


class SettledResponse(Response):
    """The answer of ``protocol`` to a request whose session settled it at once (it opened no
    stream: it was refused): the events its driver holds, sent without the runner."""

    def __init__(self, driver: SessionDriver, protocol: RequestProtocol) -> None:
        super().__init__(media_type=protocol.media_type)
        self._driver = driver
        self._protocol = protocol

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        transport = http_transport(scope, receive, send)
        driver = self._driver
        try:
            reply: Reply[HttpPart] = Reply()
            while len(driver.outbound) and reply.close is None:
                event = await driver.outbound.get()  # queued: no wait
                reply = self._protocol.reply(driver.sent(event) or event)
                for frame in reply.frames:
                    await transport.send(frame)
            await transport.close(reply.close or self._protocol.failure_close)
        except PeerGone:
            pass  # the client left: nobody is waiting for the answer
        finally:
            await driver.close()


def speak_request(
    gateway: Gateway, name: str, start: StartOptions, text: str, protocol: RequestProtocol
) -> Response:
    """The answer to one HTTP request: ``text`` spoken with ``start`` (unpaced) on a request
    driver counted as ``name`` in the metrics, in ``protocol``'s shape."""
    driver = gateway.new_request_driver(name)
    driver.session.request(_CONTEXT, replace(start, paced=False), text, driver.now())
    if driver.session.open_contexts == 0 and len(driver.outbound):
        return SettledResponse(driver, protocol)  # refused before any work
    return RunnerResponse(driver, protocol, gateway.runner_settings)
