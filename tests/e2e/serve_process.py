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

from tests.conftest import free_port

__all__ = ["serve_process"]


@contextmanager
def serve_process(
    env: Mapping[str, str] | None = None,
    args: Sequence[str] = (),
    stderr: IO[bytes] | int = subprocess.DEVNULL,
) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    """A ready ``voxflow serve --port N *args`` with ``env`` added to this process's
    environment, its log going to ``stderr``; the process and its port."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "voxflow.cli", "serve", "--port", str(port), *args],
        env={**os.environ, **(env or {})},
        stdout=subprocess.DEVNULL,
        stderr=stderr,
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("voxflow serve did not start")
            time.sleep(0.1)
        yield process, port
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(30)
