"""``voxflow serve`` as an operator runs it: a real process on a free port, ready when its
``/readyz`` answers 200, killed if a test left it running."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import IO

from tests.support.servers import free_port

__all__ = ["serve_process", "serve_processes"]


@contextmanager
def serve_process(
    env: Mapping[str, str] | None = None,
    args: Sequence[str] = (),
    stderr: IO[bytes] | int = subprocess.DEVNULL,
) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    """A ready ``voxflow serve --port N *args`` with ``env`` added to this process's
    environment, its log going to ``stderr``; the process and its port."""
    with serve_processes(1, env, args, stderr) as (served,):
        yield served


@contextmanager
def serve_processes(
    count: int,
    env: Mapping[str, str] | None = None,
    args: Sequence[str] = (),
    stderr: IO[bytes] | int = subprocess.DEVNULL,
) -> Iterator[list[tuple[subprocess.Popen[bytes], int]]]:
    """``count`` of those, started at once (their start-ups overlap), each on a port of its
    own; yielded once every one is ready."""
    started: list[tuple[subprocess.Popen[bytes], int]] = []
    try:
        for _ in range(count):
            port = free_port()
            while port in (p for _, p in started):
                port = free_port()
            process = subprocess.Popen(
                [sys.executable, "-m", "voxflow.cli.main", "serve", "--port", str(port), *args],
                env={**os.environ, **(env or {})},
                stdout=subprocess.DEVNULL,
                stderr=stderr,
            )
            started.append((process, port))
        deadline = time.monotonic() + 120
        for process, port in started:
            _wait_ready(process, port, deadline)
        yield started
    finally:
        for process, _ in started:
            if process.poll() is None:
                process.kill()
            process.wait(30)


def _wait_ready(process: subprocess.Popen[bytes], port: int, deadline: float) -> None:
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError("voxflow serve did not start")
        time.sleep(0.1)
