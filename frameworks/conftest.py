"""One voxflow server for the whole framework session, started from voxflow's own venv.

The frameworks live in .venv-frameworks and never import voxflow: they reach it over the
network, as an agent does. VOXFLOW_BIN names the `voxflow` executable (default: the repo's
.venv/bin/voxflow).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import trustme
from loguru import logger

sys.path.insert(0, str(Path(__file__).parent))

import voxflow_checks

REPO = Path(__file__).resolve().parent.parent
READY_TIMEOUT_S = 120.0
SERVER_LOGS: list[Path] = []  # shown in the summary when a test failed


@dataclass(frozen=True)
class VoxflowServer:
    port: int
    wyoming_port: int
    log_path: Path

    @property
    def http_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _log_tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def _voxflow_binary() -> str:
    return os.environ.get("VOXFLOW_BIN", str(REPO / ".venv" / "bin" / "voxflow"))


@contextlib.contextmanager
def _serve(extra_args: list[str], log_path: Path, scheme: str = "http") -> Iterator[int]:
    """`voxflow serve` on a free port until /readyz answers 200; SIGTERM at the end."""
    binary = _voxflow_binary()
    if not Path(binary).exists():
        pytest.exit(
            f"no voxflow executable at {binary} (run `make install`, or set VOXFLOW_BIN)", 2
        )
    port = _free_port()
    command = [binary, "serve", "--host", "127.0.0.1", "--port", str(port), "--max-streams", "32"]
    with open(log_path, "wb") as log:
        process = subprocess.Popen(command + extra_args, stdout=log, stderr=subprocess.STDOUT)
    insecure = ssl.create_default_context()
    insecure.check_hostname = False
    insecure.verify_mode = ssl.CERT_NONE
    try:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while True:
            if process.poll() is not None:
                pytest.exit(
                    f"voxflow exited with {process.returncode} before it was ready:\n"
                    + _log_tail(log_path),
                    2,
                )
            try:
                url = f"{scheme}://127.0.0.1:{port}/readyz"
                with urllib.request.urlopen(url, timeout=2, context=insecure) as response:
                    if response.status == 200:
                        break
            except (urllib.error.URLError, OSError):
                pass
            if time.monotonic() > deadline:
                pytest.exit(
                    f"voxflow not ready in {READY_TIMEOUT_S:.0f} s:\n" + _log_tail(log_path), 2
                )
            time.sleep(0.2)
        yield port
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(scope="session")
def voxflow(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VoxflowServer]:
    """The server every framework test talks to (Wyoming on too)."""
    wyoming_port = _free_port()
    log_path = tmp_path_factory.mktemp("voxflow") / "server.log"
    SERVER_LOGS.append(log_path)
    with _serve(["--wyoming", f"tcp://127.0.0.1:{wyoming_port}"], log_path) as port:
        yield VoxflowServer(port, wyoming_port, log_path)


@dataclass(frozen=True)
class TlsServer:
    port: int
    certfile: Path  # the certificate authority's, which clients trust

    @property
    def https_url(self) -> str:
        return f"https://127.0.0.1:{self.port}"


@pytest.fixture(scope="session")
def voxflow_tls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TlsServer]:
    """A second server on HTTPS/wss:// with a certificate for 127.0.0.1 from a throwaway
    certificate authority (trustme); clients trust the authority through SSL_CERT_FILE."""
    folder = tmp_path_factory.mktemp("voxflow-tls")
    authority = trustme.CA()
    issued = authority.issue_cert("127.0.0.1", "localhost")
    chain, key, ca = folder / "chain.pem", folder / "key.pem", folder / "ca.pem"
    issued.private_key_pem.write_to_path(str(key))
    for i, pem in enumerate(issued.cert_chain_pems):
        pem.write_to_path(str(chain), append=i > 0)
    authority.cert_pem.write_to_path(str(ca))
    args = ["--ssl-certfile", str(chain), "--ssl-keyfile", str(key)]
    with _serve(args, folder / "server.log", scheme="https") as port:
        yield TlsServer(port, ca)


@pytest.fixture
def logs() -> Iterator[voxflow_checks.LogCapture]:
    """Warnings and errors the frameworks log during one test (tests assert it is empty)."""
    capture = voxflow_checks.LogCapture()
    capture.start()
    try:
        yield capture
    finally:
        capture.stop()


def pytest_configure(config: pytest.Config) -> None:
    # Pipecat logs through loguru, whose default sink prints every DEBUG line; keep INFO.
    logger.remove()
    logger.add(sys.stderr, level="INFO")


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:  # type: ignore[no-untyped-def]
    if exitstatus != 0:
        for path in SERVER_LOGS:
            terminalreporter.write_line(f"voxflow server log: {path}")
    if voxflow_checks.NOTES:
        terminalreporter.section("observed, not asserted")
        for note in voxflow_checks.NOTES:
            terminalreporter.write_line(note)
    quiet = voxflow_checks.LONGEST_QUIET
    if quiet:
        terminalreporter.section("longest quiet in a reply's audio, as the framework got it")
        for q in quiet:
            terminalreporter.write_line(
                f"{q.framework:<24} {q.scenario:<28} {q.seconds * 1000:7.0f} ms  "
                f"(between {q.between})"
            )
    figures = voxflow_checks.FIRST_AUDIO
    if not figures:
        return
    terminalreporter.section("first audio after the first sentence's last token")
    for f in figures:
        terminalreporter.write_line(
            f"{f.framework:<24} {f.scenario:<28} {f.seconds * 1000:7.0f} ms"
        )
