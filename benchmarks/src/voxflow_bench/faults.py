"""``voxflow soak``'s fault section: what misbehaving clients do to everyone else.

Each fault runs while ``fault_streams`` listeners stream (``load.loop_clients``), with
``/healthz`` asked every ``probe_interval_s`` from a process of its own (``health_probe``: the
soak's own event loop, busy with a thousand sockets, must not delay the probe), and the server's
resident size, open descriptors and threads read from ``/metrics`` before and after:

* *baseline*: nothing but the light load, for reference;
* *idle sockets*: connections that never send a byte, held past the server's head timeout;
* *trickling sockets*: request heads sent one byte a second, never whole;
* *vanishing clients*: native clients that start a reply and reset the connection once its
  audio flows (a third of them right after sending), in batches;
* *slow readers*: one long answer per protocol to a socket with a tiny receive buffer that
  never reads: the server must close each after its write timeout and free its stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import socket
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

from voxflow_bench.health_probe import HealthProbe
from voxflow_bench.load import loop_clients, stream_limit
from voxflow_bench.soak.clients import ELEVEN_VOICE, guarded, native_vanish
from voxflow_bench.soak.options import SLOW_TEXT, SoakOptions
from voxflow_bench.soak.report import FaultResult
from voxflow_bench.soak.stats import Outcomes
from voxflow_bench.soak.wire import (
    Endpoint,
    masked_frame,
    peer_closed,
    raw_connect,
    raw_websocket,
    server_end_open,
    server_stats,
    tcp_states,
    wait_idle,
)
from voxflow_bench.stats import Distribution

__all__ = ["run_faults"]

log = logging.getLogger(__name__)
SLOW_RCVBUF = 4096  # the kernel makes it a few KiB: full after one window of audio


async def _fault(
    endpoint: Endpoint, options: SoakOptions, name: str, action: Callable[[], Awaitable[str]]
) -> FaultResult:
    log.info("faults: %s", name)
    await wait_idle(endpoint, options.settle_s)  # what the previous section left has settled
    before = await server_stats(endpoint, options.pid)
    stop = asyncio.Event()
    load = asyncio.create_task(
        loop_clients(endpoint, options, options.fault_streams, stop=stop, label=name, listen=True)
    )
    started = time.monotonic()
    with HealthProbe(endpoint.host, endpoint.port, options.probe_interval_s) as probe:
        try:
            detail = await action()
        finally:
            seconds = time.monotonic() - started
            stop.set()
            outcomes = await load
    await wait_idle(endpoint, options.settle_s)
    after = await server_stats(endpoint, options.pid)
    detail += f"; streams admitted after: {after.admitted_streams}"
    log.info("faults: %s: %s", name, detail)
    return FaultResult(
        name,
        detail,
        seconds,
        Distribution.of(probe.round_trips_ms),
        probe.failures,
        before,
        after,
        Outcomes.of(outcomes),
    )


async def _open(endpoint: Endpoint, count: int) -> tuple[list[socket.socket], int]:
    socks: list[socket.socket] = []
    failed = 0
    for _ in range(count):
        try:
            socks.append(await raw_connect(endpoint))
        except OSError:
            failed += 1
    return socks, failed


async def _idle(endpoint: Endpoint, options: SoakOptions) -> str:
    socks, failed = await _open(endpoint, options.idle_sockets)
    try:
        await asyncio.sleep(options.idle_hold_s)
        closed = sum(peer_closed(sock) for sock in socks)
    finally:
        for sock in socks:
            sock.close()
    return (
        f"{len(socks)} silent sockets ({failed} failed to connect) held {options.idle_hold_s:g} s:"
        f" {closed} closed by the server"
    )


async def _trickle(endpoint: Endpoint, options: SoakOptions) -> str:
    head = b"GET /v1/voices HTTP/1.1\r\nx-pad: " + b"a" * 4000  # never whole in time
    socks, failed = await _open(endpoint, options.trickle_sockets)
    sent = dict.fromkeys(socks, 0)
    closed = 0
    try:
        deadline = time.monotonic() + options.trickle_s
        while sent and time.monotonic() < deadline:
            for sock in list(sent):
                if peer_closed(sock):
                    closed += 1
                    del sent[sock]
                    sock.close()
                    continue
                with contextlib.suppress(OSError):  # reset under us: seen as closed next round
                    sent[sock] += sock.send(head[sent[sock] : sent[sock] + 1])
            await asyncio.sleep(1.0)
    finally:
        for sock in sent:
            sock.close()
    return (
        f"{len(socks)} sockets sending a head a byte a second ({failed} failed to connect) for "
        f"{options.trickle_s:g} s: {closed} closed by the server"
    )


async def _vanishing(endpoint: Endpoint, options: SoakOptions) -> str:
    points: Counter[str] = Counter()
    count, batch = options.vanishing_clients, options.vanish_batch
    for first in range(0, count, batch):
        requests = [
            guarded(
                "native",
                native_vanish(endpoint, options.reply(i, 0).text, wait_for_audio=i % 3 != 2),
                options.run_timeout_s,
            )
            for i in range(first, min(first + batch, count))
        ]
        points.update(o.status for o in await asyncio.gather(*requests))
    summary = ", ".join(f"{status} {n}" for status, n in points.most_common())
    return f"{count} native clients reset mid-stream, {batch} at a time: {summary}"


def _wyoming_endpoint(uri: str | None) -> Endpoint:
    parts = urlsplit(uri or "")
    return Endpoint(parts.hostname or "", parts.port or 0)


async def _slow_request(endpoint: Endpoint, protocol: str, wyoming: str | None) -> socket.socket:
    """One long answer asked for on a socket that will never be read."""
    loop = asyncio.get_running_loop()
    text = json.dumps
    if protocol in ("native", "elevenlabs-ws"):
        if protocol == "native":
            path = "/v1/stream"
            frames = [
                {"type": "start", "context_id": "slow", "output_format": "pcm_44100"},
                {"type": "text", "context_id": "slow", "text": SLOW_TEXT},
                {"type": "end", "context_id": "slow"},
            ]
        else:
            # The longest inactivity timeout, so that only the write timeout can close it.
            query = "output_format=pcm_44100&inactivity_timeout=180"
            path = f"/v1/text-to-speech/{ELEVEN_VOICE}/stream-input?{query}"
            frames = [{"text": " "}, {"text": SLOW_TEXT}, {"text": ""}]
        sock = await raw_websocket(endpoint, path, SLOW_RCVBUF)
        data = b"".join(masked_frame(text(frame)) for frame in frames)
    elif protocol == "wyoming":
        sock = await raw_connect(_wyoming_endpoint(wyoming), SLOW_RCVBUF)
        body = text({"text": SLOW_TEXT}).encode()
        data = text({"type": "synthesize", "data_length": len(body)}).encode() + b"\n" + body
    else:
        if protocol == "openai":
            path, payload = "/v1/audio/speech", {"input": SLOW_TEXT, "response_format": "pcm"}
        else:
            path = f"/v1/text-to-speech/{ELEVEN_VOICE}/stream?output_format=pcm_44100"
            payload = {"text": SLOW_TEXT}
        body = text(payload).encode()
        sock = await raw_connect(endpoint, SLOW_RCVBUF)
        data = (
            f"POST {path} HTTP/1.1\r\nhost: {endpoint.host}\r\ncontent-type: application/json\r\n"
            f"content-length: {len(body)}\r\n\r\n"
        ).encode() + body
    await loop.sock_sendall(sock, data)
    return sock


async def _slow_readers(endpoint: Endpoint, options: SoakOptions) -> str:
    protocols = ["native", "elevenlabs-ws", "openai", "elevenlabs-http"]
    if options.wyoming:
        protocols.append("wyoming")
    plan = [p for p in protocols for _ in range(options.slow_readers)]
    # In batches the server admits beside the light load: a refused slow reader (a 429, or
    # Wyoming's error event on a connection that stays open) would test admission instead.
    batch = max(1, await stream_limit(endpoint) - options.fault_streams)
    readers: list[_SlowReader] = []
    failed: Counter[str] = Counter()
    for first in range(0, len(plan), batch):
        mine = await _slow_batch(endpoint, options, plan[first : first + batch], failed)
        readers.extend(mine)
    parts = []
    for protocol in protocols:
        mine = [reader for reader in readers if reader.protocol == protocol]
        times = [r.closed_after for r in mine if r.closed_after is not None]
        worst = f" after {max(times):.0f} s" if times else ""
        fail = f", {failed[protocol]} failed to start" if failed[protocol] else ""
        unseen = sum(not r.visible for r in mine)
        blind = f", {unseen} not seen from this machine" if unseen else ""
        parts.append(f"{protocol} {len(times)}/{len(mine)} closed{worst}{fail}{blind}")
    return (
        f"slow readers (never read, 4 KiB receive buffer), {batch} at a time, watched "
        f"{options.slow_timeout_s:g} s: " + ", ".join(parts)
    )


async def _slow_batch(
    endpoint: Endpoint, options: SoakOptions, protocols: list[str], failed: Counter[str]
) -> list[_SlowReader]:
    """Slow readers of ``protocols`` at once, watched until the server closed each of them or
    ``slow_timeout_s`` passed; their sockets are closed after."""
    readers: list[_SlowReader] = []
    try:
        for protocol in protocols:
            port = _wyoming_endpoint(options.wyoming).port if protocol == "wyoming" else None
            try:
                sock = await _slow_request(endpoint, protocol, options.wyoming)
            except (OSError, ConnectionError) as error:
                log.warning("slow reader on %s: %s", protocol, error)
                failed[protocol] += 1
                continue
            readers.append(_SlowReader(protocol, sock, port or endpoint.port))
        deadline = time.monotonic() + options.slow_timeout_s
        while any(r.closed_after is None for r in readers) and time.monotonic() < deadline:
            states = tcp_states()
            for reader in readers:
                reader.check(states)
            await asyncio.sleep(0.2)
    finally:
        for reader in readers:
            reader.sock.close()
    return readers


class _SlowReader:
    """A socket that is never read, and when the server closed its end of it."""

    def __init__(self, protocol: str, sock: socket.socket, server_port: int) -> None:
        self.protocol = protocol
        self.sock = sock
        self.server_port = server_port
        self.started = time.monotonic()
        self.closed_after: float | None = None
        # Whether the server's end shows in this machine's TCP table (a local server).
        self.visible = bool(server_end_open(tcp_states(), server_port, sock))

    def check(self, states: dict[tuple[int, int], str] | None) -> None:
        if self.closed_after is not None:
            return
        server_end = server_end_open(states, self.server_port, self.sock)
        # A reset shows on the client's socket; a FIN queued behind unread data only on the
        # server's end (see soak_wire.tcp_states).
        if peer_closed(self.sock) or (self.visible and not server_end):
            self.closed_after = time.monotonic() - self.started


async def run_faults(endpoint: Endpoint, options: SoakOptions) -> tuple[FaultResult, ...]:
    o = options
    faults: list[tuple[str, Callable[[], Awaitable[str]]]] = [
        ("baseline", lambda: _baseline(o.baseline_s)),
    ]
    if o.idle_sockets:
        faults.append((f"{o.idle_sockets} idle sockets", lambda: _idle(endpoint, o)))
    if o.trickle_sockets:
        faults.append((f"{o.trickle_sockets} trickling", lambda: _trickle(endpoint, o)))
    if o.vanishing_clients:
        faults.append((f"{o.vanishing_clients} vanishing", lambda: _vanishing(endpoint, o)))
    if o.slow_readers:
        faults.append(("slow readers", lambda: _slow_readers(endpoint, o)))
    return tuple([await _fault(endpoint, o, name, action) for name, action in faults])


async def _baseline(seconds: float) -> str:
    await asyncio.sleep(seconds)
    return f"the light load alone for {seconds:g} s"
