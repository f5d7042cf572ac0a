"""The bytes ``voxflow soak`` puts on the wire itself: a small HTTP/1.1 client on asyncio streams,
the server's own figures (``/metrics``, ``/readyz``), and raw sockets for the faults.

Why not an HTTP library: the soak must see what a library hides (the moment the status line
arrives, a body cut without its last chunk, a reset), must be able to vanish mid-body, and must
run with the server's runtime dependencies only (httpx is a test dependency).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import math
import os
import re
import select
import socket
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from urllib.parse import urlsplit

__all__ = [
    "Endpoint",
    "HttpAnswer",
    "IncompleteBody",
    "ServerStats",
    "get",
    "handshake_request",
    "masked_frame",
    "open_request",
    "peer_closed",
    "server_end_open",
    "server_stats",
    "tcp_states",
    "wait_idle",
]

_MIB = 1024.0 * 1024.0
_HEAD_LIMIT = 64 << 10


class IncompleteBody(Exception):
    """The server closed the connection before the body's end (a cut body, as after a failure)."""


@dataclass(frozen=True)
class Endpoint:
    host: str
    port: int

    @classmethod
    def from_url(cls, url: str) -> Endpoint:
        """``http://host:port`` (or ``ws://``, any path) as an endpoint."""
        parts = urlsplit(url)
        if parts.scheme not in ("http", "ws") or parts.hostname is None:
            raise ValueError(f"expected an http:// or ws:// URL, got {url!r}")
        return cls(parts.hostname, parts.port or 80)

    @property
    def http(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def ws(self) -> str:
        return f"ws://{self.host}:{self.port}"


@dataclass
class HttpAnswer:
    """An answer whose head has arrived; its body is read with ``chunks()``."""

    status: int
    headers: dict[str, str]
    sent_at: float  # time.monotonic() just before the request was written
    head_at: float  # when the status line and headers were in
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter

    @property
    def head_ms(self) -> float:
        return 1000.0 * (self.head_at - self.sent_at)

    async def chunks(self) -> AsyncIterator[bytes]:
        """The body as it arrives, de-chunked; ``IncompleteBody`` if it is cut."""
        try:
            if "chunked" in self.headers.get("transfer-encoding", "").lower():
                while True:
                    size = int((await self.reader.readline()).split(b";")[0].strip() or b"x", 16)
                    if size == 0:
                        while (await self.reader.readline()) not in (b"\r\n", b"\n", b""):
                            pass
                        return
                    data = await self.reader.readexactly(size)
                    await self.reader.readexactly(2)
                    yield data
            elif "content-length" in self.headers:
                left = int(self.headers["content-length"])
                while left > 0:
                    data = await self.reader.read(min(left, 65536))
                    if not data:
                        raise IncompleteBody(f"{left} bytes of the body missing")
                    left -= len(data)
                    yield data
            else:
                while data := await self.reader.read(65536):
                    yield data
        except (asyncio.IncompleteReadError, ConnectionError, ValueError) as error:
            raise IncompleteBody(f"body cut: {error!r}") from error

    async def body(self) -> bytes:
        return b"".join([part async for part in self.chunks()])

    def vanish(self) -> None:
        """Reset the connection (no FIN): a client that is simply gone."""
        reset(self.writer.get_extra_info("socket"))
        self.writer.transport.abort()

    async def aclose(self) -> None:
        self.writer.close()
        # The server may reset it after answering: closed all the same.
        with contextlib.suppress(ConnectionError, OSError):
            await self.writer.wait_closed()


async def open_request(
    endpoint: Endpoint,
    method: str,
    path: str,
    body: bytes | None = None,
    headers: tuple[tuple[str, str], ...] = (),
    timeout_s: float = 60.0,
) -> HttpAnswer:
    """Connect, send one request (``connection: close``) and read its head."""
    async with asyncio.timeout(timeout_s):
        reader, writer = await asyncio.open_connection(endpoint.host, endpoint.port)
        try:
            lines = [f"{method} {path} HTTP/1.1", f"host: {endpoint.host}:{endpoint.port}"]
            lines += [f"{name}: {value}" for name, value in headers]
            if body is not None:
                lines.append(f"content-length: {len(body)}")
            lines.append("connection: close")
            sent_at = time.monotonic()
            writer.write(("\r\n".join(lines) + "\r\n\r\n").encode() + (body or b""))
            await writer.drain()
            head = await reader.readuntil(b"\r\n\r\n")
            head_at = time.monotonic()
        except BaseException:
            writer.transport.abort()
            raise
    if len(head) > _HEAD_LIMIT:
        writer.transport.abort()
        raise ValueError("answer head too long")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    status = int(status_line.split(" ", 2)[1])
    parsed: dict[str, str] = {}
    for line in header_lines:
        if ":" in line:
            name, value = line.split(":", 1)
            parsed[name.strip().lower()] = value.strip()
    return HttpAnswer(status, parsed, sent_at, head_at, reader, writer)


async def get(endpoint: Endpoint, path: str, timeout_s: float = 10.0) -> tuple[int, bytes]:
    """One GET, read whole: status and body."""
    answer = await open_request(endpoint, "GET", path, timeout_s=timeout_s)
    try:
        async with asyncio.timeout(timeout_s):
            return answer.status, await answer.body()
    finally:
        await answer.aclose()


async def post_json(
    endpoint: Endpoint, path: str, payload: dict[str, object], timeout_s: float = 60.0
) -> HttpAnswer:
    body = json.dumps(payload).encode()
    return await open_request(
        endpoint, "POST", path, body, (("content-type", "application/json"),), timeout_s
    )


# -- the server's own figures ---------------------------------------------------------------------


@dataclass(frozen=True)
class ServerStats:
    """Read from ``/metrics``; threads from ``voxflow_threads{kind="os"}`` (or /proc/<pid>),
    the event loop's tasks from ``voxflow_event_loop_tasks`` (None where either is missing).

    ``rss_mib`` is the resident size less what the phrase cache holds (``voxflow_cache_bytes``,
    ``cache_mib``): the cache keeps phrases said again on purpose, up to its budget, and a leak
    is what grows besides it."""

    rss_mib: float
    open_fds: int
    threads: int | None
    tasks: int | None
    admitted_streams: int
    at: float
    cache_mib: float = 0.0


def _sample(text: str, name: str, labels: str = "") -> float | None:
    found = re.search(rf"^{re.escape(name + labels)} (\S+)$", text, re.MULTILINE)
    return None if found is None else float(found.group(1))


def parse_metrics(text: str, pid: int | None = None) -> ServerStats:
    rss = _sample(text, "process_resident_memory_bytes")
    fds = _sample(text, "process_open_fds")
    if rss is None or fds is None:
        raise ValueError("/metrics has no process_resident_memory_bytes / process_open_fds")
    threads = _sample(text, "voxflow_threads", '{kind="os"}')
    if threads is None and pid is not None:
        threads = _proc_threads(pid)
    admitted = _sample(text, "voxflow_admitted_streams") or 0.0
    tasks = _sample(text, "voxflow_event_loop_tasks")
    cache = _sample(text, "voxflow_cache_bytes") or 0.0
    return ServerStats(
        (rss - cache) / _MIB,
        int(fds),
        None if threads is None else int(threads),
        None if tasks is None or math.isnan(tasks) else int(tasks),
        int(admitted),
        time.monotonic(),
        cache / _MIB,
    )


def _proc_threads(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Threads:"):
                    return float(line.split()[1])
    except OSError:
        return None
    return None


async def server_stats(endpoint: Endpoint, pid: int | None = None) -> ServerStats:
    status, body = await get(endpoint, "/metrics")
    if status != 200:
        raise ValueError(f"/metrics answered {status}")
    return parse_metrics(body.decode(), pid)


async def server_workers(endpoint: Endpoint) -> int:
    """The server's synthesis workers (``voxflow_workers`` in ``/metrics``)."""
    status, body = await get(endpoint, "/metrics")
    workers = _sample(body.decode(), "voxflow_workers") if status == 200 else None
    if workers is None:
        raise ValueError(f"{endpoint.http}/metrics has no voxflow_workers")
    return int(workers)


async def readyz(endpoint: Endpoint) -> dict[str, object]:
    """``/readyz``'s body (its status is 503 while saturated or draining: still an answer)."""
    _, body = await get(endpoint, "/readyz")
    answer = json.loads(body)
    if not isinstance(answer, dict):
        raise ValueError("/readyz did not answer an object")
    return answer


async def wait_ready(endpoint: Endpoint, timeout_s: float) -> None:
    """Poll ``/readyz`` until it answers 200 (a server starting up refuses or answers 503)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if (await get(endpoint, "/readyz"))[0] == 200:
                return
        except (OSError, TimeoutError, ValueError):
            pass
        if time.monotonic() > deadline:
            raise ValueError(f"{endpoint.http} not ready after {timeout_s:g} s")
        await asyncio.sleep(0.2)


async def wait_idle(endpoint: Endpoint, settle_s: float, limit_s: float = 60.0) -> None:
    """Wait until the server holds no admitted stream (or ``limit_s``), then ``settle_s`` more:
    connections are torn down and freed memory returned (after 0.25 s idle) by then."""
    deadline = time.monotonic() + limit_s
    while (await server_stats(endpoint)).admitted_streams and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
    await asyncio.sleep(settle_s)


# -- raw sockets for the faults -------------------------------------------------------------------

_LINGER_RESET = (1).to_bytes(4, "little") + (0).to_bytes(4, "little")


def reset(sock: socket.socket | None) -> None:
    """SO_LINGER 0: closing the socket sends RST, no FIN and no close handshake."""
    if sock is not None:
        with contextlib.suppress(OSError):  # already gone
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _LINGER_RESET)


def peer_closed(sock: socket.socket) -> bool:
    """Whether the server closed (FIN or RST) this connection, even with unread data in it:
    ``POLLRDHUP`` says so without reading, which a slow reader must not do."""
    poller = select.poll()
    poller.register(sock, select.POLLRDHUP | select.POLLHUP | select.POLLERR)
    return bool(poller.poll(0))


def tcp_states() -> dict[tuple[int, int], str] | None:
    """This machine's TCP connections, (local port, remote port) -> state in hex ("01" is
    established), from /proc/net/tcp; None where there is no such table.

    Why: a server that closes a slow reader's connection cannot tell it so. The FIN queues
    behind the data the reader never takes, so the client's socket looks open forever; only the
    server's end of it (FIN_WAIT1, or gone) shows that it was closed. Seen from here, that works
    for a server on this machine, the way ``make soak`` runs one.
    """
    states: dict[tuple[int, int], str] = {}
    found = False
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table, encoding="ascii") as lines:
                next(lines)  # the header
                found = True
                for line in lines:
                    fields = line.split()
                    local = int(fields[1].rsplit(":", 1)[1], 16)
                    remote = int(fields[2].rsplit(":", 1)[1], 16)
                    states[(local, remote)] = fields[3]
        except (OSError, StopIteration, IndexError, ValueError):
            continue
    return states if found else None


def server_end_open(
    states: dict[tuple[int, int], str] | None, server_port: int, sock: socket.socket
) -> bool | None:
    """Whether the server's end of ``sock``'s connection is still established (None: not seen
    from this machine)."""
    if states is None:
        return None
    state = states.get((server_port, sock.getsockname()[1]))
    return None if state is None else state == "01"


def handshake_request(host: str, path: str) -> bytes:
    key = base64.b64encode(os.urandom(16)).decode()
    return (
        f"GET {path} HTTP/1.1\r\nhost: {host}\r\nconnection: upgrade\r\nupgrade: websocket\r\n"
        f"sec-websocket-version: 13\r\nsec-websocket-key: {key}\r\n\r\n"
    ).encode()


def masked_frame(text: str) -> bytes:
    """One client text frame (FIN, opcode 1, masked as RFC 6455 requires of a client)."""
    payload = text.encode()
    size = len(payload)
    if size < 126:
        head = bytes([0x81, 0x80 | size])
    elif size < 1 << 16:
        head = bytes([0x81, 0x80 | 126]) + size.to_bytes(2, "big")
    else:
        head = bytes([0x81, 0x80 | 127]) + size.to_bytes(8, "big")
    mask = os.urandom(4)
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


async def raw_connect(endpoint: Endpoint, rcvbuf: int | None = None) -> socket.socket:
    """A non-blocking TCP socket to the server, with a small receive buffer if asked (set before
    connecting, so the window the server sees is small from the start)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setblocking(False)
    if rcvbuf is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    try:
        await asyncio.get_running_loop().sock_connect(sock, (endpoint.host, endpoint.port))
    except BaseException:
        sock.close()
        raise
    return sock


async def raw_websocket(endpoint: Endpoint, path: str, rcvbuf: int | None = None) -> socket.socket:
    """A WebSocket opened by hand on a raw socket: the 101 is read and nothing after it, so the
    caller decides whether anything is ever read again."""
    sock = await raw_connect(endpoint, rcvbuf)
    loop = asyncio.get_running_loop()
    try:
        await loop.sock_sendall(sock, handshake_request(f"{endpoint.host}:{endpoint.port}", path))
        head = b""
        while b"\r\n\r\n" not in head:
            # One byte at a time: the server sends nothing after its 101 until we speak, but
            # reading past the head would be reading what a slow reader must leave alone.
            data = await loop.sock_recv(sock, 1)
            if not data:
                raise ConnectionError("closed during the WebSocket handshake")
            head += data
        if not head.startswith(b"HTTP/1.1 101"):
            status = head.split(b"\r\n", 1)[0]
            raise ConnectionError(f"handshake refused: {status!r}")
    except BaseException:
        sock.close()
        raise
    return sock
