"""The line ``voxflow serve`` logs once it listens (``voxflow.server.ready``)."""

from __future__ import annotations

import pytest

from tests.support.servers import free_port, serving
from voxflow.config import ServerSettings
from voxflow.server.ready import bound_address, ready_line


def test_the_ready_line_names_the_demo_the_docs_and_the_metrics() -> None:
    assert ready_line("127.0.0.1", 8000, tls=False, keys=False) == (
        "voxflow is ready: demo page http://127.0.0.1:8000/"
        " | API docs http://127.0.0.1:8000/docs | metrics http://127.0.0.1:8000/metrics"
    )


@pytest.mark.parametrize(
    ("host", "base"),
    [
        ("0.0.0.0", "http://127.0.0.1:9000"),  # every interface: open it on loopback
        ("::", "http://[::1]:9000"),
        ("::1", "http://[::1]:9000"),
        ("192.168.1.20", "http://192.168.1.20:9000"),
        ("tts.example", "http://tts.example:9000"),
    ],
)
def test_the_urls_are_ones_a_browser_can_open(host: str, base: str) -> None:
    assert f"demo page {base}/ " in ready_line(host, 9000, tls=False, keys=False)


def test_tls_and_keys_show_in_the_ready_line() -> None:
    line = ready_line("127.0.0.1", 8443, tls=True, keys=True)
    assert "demo page https://127.0.0.1:8443/ " in line
    assert "API keys are on" in line
    assert "API keys" not in ready_line("127.0.0.1", 8443, tls=True, keys=False)


def test_the_address_is_the_listening_sockets_not_the_settings() -> None:
    port = free_port()
    with serving(ServerSettings(port=port, workers=1)) as server:
        # Settings naming another port: the socket's own address wins.
        assert bound_address(server, ServerSettings(port=1)) == ("127.0.0.1", port)
