"""What ``voxflow serve`` does to its own process once started, read from its ``/metrics``."""

from __future__ import annotations

import re
import urllib.request

from tests.e2e.serve_process import serve_process


def _metric(port: int, name: str) -> float:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        text = response.read().decode()
    found = re.search(rf"^{name} (\S+)$", text, re.MULTILINE)
    assert found is not None, f"{name} not in /metrics"
    return float(found.group(1))


def test_the_start_up_objects_are_kept_out_of_the_garbage_collectors_walks() -> None:
    # A full collection walks every object not frozen, on the event loop: the voice and the
    # app's tables would cost 60 to 90 ms in a burst of connections (runtime.memory).
    with serve_process({}) as (_, port):
        frozen = _metric(port, "voxflow_gc_frozen_objects")
    assert frozen > 10_000
