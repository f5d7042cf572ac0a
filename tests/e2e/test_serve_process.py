"""What ``voxflow serve`` does to its own process once started, read from its ``/metrics``."""

from __future__ import annotations

import re
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.serve_process import serve_process


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, Path]]:
    """One ``voxflow serve`` with the default settings and log format for the module (each
    start-up loads the voice): its port, and the file its log goes to."""
    stderr_path = tmp_path_factory.mktemp("serve") / "stderr.log"
    with stderr_path.open("wb") as stderr, serve_process({}, stderr=stderr) as (_, port):
        yield port, stderr_path


def _metric(port: int, name: str) -> float:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        text = response.read().decode()
    found = re.search(rf"^{name} (\S+)$", text, re.MULTILINE)
    assert found is not None, f"{name} not in /metrics"
    return float(found.group(1))


def test_the_start_up_objects_are_kept_out_of_the_garbage_collectors_walks(
    served: tuple[int, Path],
) -> None:
    # A full collection walks every object not frozen, on the event loop: the voice and the
    # app's tables would cost 60 to 90 ms in a burst of connections (runtime.memory). Frozen
    # once, at start-up: requests before this one change nothing here.
    port, _ = served
    assert _metric(port, "voxflow_gc_frozen_objects") > 10_000


def test_once_ready_it_logs_the_urls_to_open_and_they_answer(served: tuple[int, Path]) -> None:
    # The default log format: what `make serve` shows.
    port, stderr_path = served
    # Logged before the first request is answered (serve_process waited for /readyz).
    log = stderr_path.read_text()
    found = re.search(
        r" INFO voxflow\.server\.ready \[-\] voxflow is ready: demo page (\S+)"
        r" \| API docs (\S+) \| metrics (\S+)$",
        log,
        re.MULTILINE,
    )
    assert found is not None, log
    base = f"http://127.0.0.1:{port}"
    assert found.groups() == (f"{base}/", f"{base}/docs", f"{base}/metrics")
    for url in found.groups():
        with urllib.request.urlopen(url, timeout=10) as response:
            assert response.status == 200, url
            body = response.read()
    assert b"voxflow_" in body  # the metrics URL is the metrics
    # After uvicorn's own line, not lost among the lines before it.
    assert log.index("Uvicorn running on") < log.index("voxflow is ready")
