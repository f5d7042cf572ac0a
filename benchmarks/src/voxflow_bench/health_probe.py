"""``GET /healthz`` on a fresh connection at a fixed interval, from a process of its own.

A load balancer's health check runs on another machine. Run from a thread of the soak's own
process, its round trips would include the soak's waits for the GIL while its event loop drives
a thousand sockets, and the figure would blame the server for the client's load. So
``HealthProbe`` runs ``python -m voxflow_bench.health_probe HOST PORT INTERVAL TIMEOUT``, which
prints one line per probe (the round trip in milliseconds, or ``fail``) until its stdin closes.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
from typing import TextIO

__all__ = ["HealthProbe"]

_STOP_BOUND_S = 10.0


class HealthProbe:
    """The probe process, as a context manager: ``round_trips_ms`` and ``failures`` once left."""

    def __init__(self, host: str, port: int, interval_s: float, timeout_s: float = 5.0) -> None:
        self._args = [str(a) for a in (host, port, interval_s, timeout_s)]
        self._process: subprocess.Popen[str] | None = None
        self._reader: threading.Thread | None = None
        self.round_trips_ms: list[float] = []
        self.failures = 0
        self._first = threading.Event()

    def __enter__(self) -> HealthProbe:
        self._process = subprocess.Popen(
            [sys.executable, "-m", "voxflow_bench.health_probe", *self._args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        stdout = self._process.stdout
        assert stdout is not None
        self._reader = threading.Thread(target=self._read, args=(stdout,), daemon=True)
        self._reader.start()
        # Probing before what it watches starts: a fault over before the probe process had
        # started (a second of Python start-up) would have no probe at all.
        self._first.wait(_STOP_BOUND_S)
        return self

    def __exit__(self, *_: object) -> None:
        process, reader = self._process, self._reader
        assert process is not None and reader is not None and process.stdin is not None
        process.stdin.close()  # the probe's signal to stop
        try:
            process.wait(_STOP_BOUND_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        reader.join(_STOP_BOUND_S)
        if process.stdout is not None:
            process.stdout.close()

    def _read(self, stdout: TextIO) -> None:
        for line in stdout:
            word = line.strip()
            if word == "fail":
                self.failures += 1
            elif word:
                self.round_trips_ms.append(float(word))
            self._first.set()
        self._first.set()  # the process ended (or never probed): nobody waits on it


def _ask(host: str, port: int, timeout_s: float) -> bool:
    request = f"GET /healthz HTTP/1.1\r\nhost: {host}\r\nconnection: close\r\n\r\n".encode()
    try:
        with socket.create_connection((host, port), timeout=timeout_s) as sock:
            sock.sendall(request)
            answer = b""
            while chunk := sock.recv(4096):
                answer += chunk
    except OSError:
        return False
    return answer.startswith(b"HTTP/1.1 200")


def _probe(host: str, port: int, interval_s: float, timeout_s: float) -> None:
    stop = threading.Event()

    def until_stdin_closes() -> None:  # the soak is done with the probe, or gone itself
        sys.stdin.read()
        stop.set()

    threading.Thread(target=until_stdin_closes, daemon=True).start()
    next_at = time.monotonic()
    while not stop.is_set():
        started = time.monotonic()
        ok = _ask(host, port, timeout_s)
        line = f"{1000.0 * (time.monotonic() - started):.3f}" if ok else "fail"
        sys.stdout.write(line + "\n")
        sys.stdout.flush()
        # A fixed schedule; a probe that overran it starts the schedule again from now.
        next_at = max(next_at + interval_s, time.monotonic())
        stop.wait(next_at - time.monotonic())


if __name__ == "__main__":
    host, port, interval, timeout = sys.argv[1:5]
    _probe(host, int(port), float(interval), float(timeout))
