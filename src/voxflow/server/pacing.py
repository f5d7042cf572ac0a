"""New sessions and requests start one per turn of the event loop, so a burst cannot hold it.

A WebSocket's first step (the middleware, the route, the accept and its log lines, the first
message's wait) costs the loop about a millisecond, and an HTTP request's about as much. The loop
runs every callback that is ready in one turn before it looks at its sockets again: 50 clients
that connect together make 50 such steps ready together, 50 ms or more of work in one turn, and
a health probe or an admitted stream's audio that becomes ready then waits for all of it (the
soak's 1,000 vanishing clients, 50 at a time, held ``/healthz`` up to 120 to 216 ms).

``StartPacer``, the app's outermost middleware, makes each WebSocket session and each HTTP
request wait for its turn (``Turns``) before the app sees it. Turns are granted one per loop
iteration, first come first served, so the loop polls its sockets between any two starts. The
work is the same; what changes is that nothing queues behind a whole burst of it. The health
paths (``limits.RESERVED_PATHS``) never wait: a probe is answered on the turn after its request
is read, however many sessions are starting. A lone request, with no one before it, goes at once.

uvloop accepts one connection per turn, so a probe that connects behind a burst waits for the
burst's accepts: short turns are what keep that wait short (the soak's figure, docs/reliability.md).

A start that the server will refuse does not wait for a turn (``refusing``: it admits no new
stream, being full or draining). Its answer is cheap (a 429, an error frame, a denied
handshake) and must come at once: in the line, a flood of 48 connections past a full server
with 17 calls speaking waited for 48 loop turns, each as long as the calls' audio made it, and
the refusals came at p95 ~290 ms; skipping it, ~65 ms (``voxflow bench-flood``,
docs/benchmarks.md). A refused start does not take a turn either: the line behind it goes on.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable

from starlette.types import ASGIApp, Receive, Scope, Send

from voxflow.server.limits import RESERVED_PATHS

__all__ = ["StartPacer", "Turns"]


class Turns:
    """Grants one turn per event-loop iteration, first come first served.

    Invariant: between two granted turns the loop completes an iteration (it polls its sockets
    and runs what became ready meanwhile), so no two holders start in the same iteration. A
    caller with no one waiting, in an iteration where no turn was granted, goes at once. A
    waiter cancelled before its turn is skipped: the turn goes to the next in line.
    """

    def __init__(self) -> None:
        self._waiting: deque[asyncio.Future[None]] = deque()
        self._granted = False  # a turn went in this iteration: the next waits for the next one

    @property
    def waiting(self) -> int:
        return sum(not waiter.done() for waiter in self._waiting)

    @property
    def busy(self) -> bool:
        """Whether ``take`` would wait (a turn went in this iteration, or others wait)."""
        return self._granted or bool(self._waiting)

    async def take(self) -> None:
        loop = asyncio.get_running_loop()
        if not self._granted and not self._waiting:
            self._grant(loop)
            return
        waiter: asyncio.Future[None] = loop.create_future()
        self._waiting.append(waiter)
        await waiter

    def _grant(self, loop: asyncio.AbstractEventLoop) -> None:
        self._granted = True
        # ``call_soon`` runs on the next iteration, after the wake-up of the turn just granted
        # (scheduled first, by ``set_result``): that turn runs, then the next is passed on for
        # the iteration after.
        loop.call_soon(self._next, loop)

    def _next(self, loop: asyncio.AbstractEventLoop) -> None:
        self._granted = False
        while self._waiting:
            waiter = self._waiting.popleft()
            if not waiter.done():  # done: cancelled while it waited
                waiter.set_result(None)
                self._grant(loop)
                return


class StartPacer:
    """ASGI middleware: every WebSocket session and HTTP request, health paths aside, starts on
    a turn of its own (``Turns``), unless ``refusing()`` says the server admits no new stream
    now (its start ends in a refusal: it goes at once); lifespan events pass straight through."""

    def __init__(self, app: ASGIApp, refusing: Callable[[], bool] = lambda: False) -> None:
        self.app = app
        self.turns = Turns()
        self.refusing = refusing

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        paced = scope["type"] == "websocket" or (
            scope["type"] == "http" and scope["path"] not in RESERVED_PATHS
        )
        # ``refusing`` is asked only of a start that would wait: with no line it goes at once.
        if paced and not (self.turns.busy and self.refusing()):
            await self.turns.take()
        await self.app(scope, receive, send)
