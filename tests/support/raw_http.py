"""HTTP/1.1 over raw sockets, for tests that need to send what no client library would: a head
that never ends, a body announced and never sent, bytes one at a time."""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import uvicorn

TIMEOUT_S = 30.0  # a bound against a hang, far above what the server needs when busy


@dataclass(frozen=True)
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes


# The headers of a WebSocket handshake (``head("GET", path, *WS_UPGRADE)``); the server checks
# the key's form only, so one fixed key serves every connection.
WS_UPGRADE = (
    "connection: upgrade",
    "upgrade: websocket",
    "sec-websocket-version: 13",
    "sec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==",
)


def head(method: str, path: str, *headers: str) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", "host: 127.0.0.1", *headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


@contextlib.contextmanager
def connected(port: int, timeout: float = TIMEOUT_S) -> Iterator[socket.socket]:
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        yield sock


def read_answer(sock: socket.socket) -> Answer:
    """One response (with a Content-Length) from ``sock``."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"the connection closed before an answer: {data!r}"
        data += chunk
    raw_head, body = data.split(b"\r\n\r\n", 1)
    status_line, *lines = raw_head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in lines)}
    length = int(headers.get("content-length", "0"))
    while len(body) < length:
        chunk = sock.recv(65536)
        assert chunk, "the connection closed inside an answer's body"
        body += chunk
    return Answer(int(status_line.split()[1]), headers, body[:length])


def closed_by_server(sock: socket.socket) -> bytes:
    """Read until the server closes the connection; what came before the end."""
    data = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            return data  # closed all the same (with input the server did not read)
        if not chunk:
            return data
        data += chunk


def ask(port: int, path: str, *headers: str) -> Answer:
    """A GET on a new connection."""
    with connected(port) as sock:
        sock.sendall(head("GET", path, *headers))
        return read_answer(sock)


def connections(server: uvicorn.Server) -> int:
    """The server's open HTTP and WebSocket connections."""
    return len(server.server_state.connections)


def until(condition: Callable[[], bool], what: str, timeout: float = TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


def client_text_frame(text: str) -> bytes:
    """One WebSocket text frame as a client sends it: final, masked (RFC 6455 5.3), with the
    payload length in the 7-, 16- or 64-bit form its size needs."""
    payload = text.encode()
    if len(payload) < 126:
        length = bytes([0x80 | len(payload)])
    elif len(payload) < 1 << 16:
        length = bytes([0x80 | 126]) + len(payload).to_bytes(2, "big")
    else:
        length = bytes([0x80 | 127]) + len(payload).to_bytes(8, "big")
    mask = b"\x5a\xa5\x3c\xc3"
    return b"\x81" + length + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
