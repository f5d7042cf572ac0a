"""TLS: given a certificate and its key, the server speaks HTTPS and wss:// on its port, which the
elevenlabs SDK's ``convert_realtime`` needs (it always connects with wss://)."""

from __future__ import annotations

import contextlib
import socket
import ssl
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
import trustme
from elevenlabs.client import ElevenLabs

from voxflow.config import ServerSettings

EL_VOICE = "21m00Tcm4TlvDq8ikWAM"  # an ElevenLabs voice id: maps to the default voice
ServerFactory = Callable[..., contextlib.AbstractContextManager[str]]


@pytest.fixture(scope="module")
def authority() -> trustme.CA:
    return trustme.CA()


@pytest.fixture
def tls_server(
    authority: trustme.CA, tmp_path: Path, server_factory: ServerFactory
) -> Callable[..., contextlib.AbstractContextManager[str]]:
    """Start a server with a certificate for 127.0.0.1 issued by ``authority`` (and any other
    settings); it yields its https:// URL."""
    certificate = authority.issue_cert("127.0.0.1", "localhost")
    chain, key = tmp_path / "chain.pem", tmp_path / "key.pem"
    certificate.private_key_pem.write_to_path(str(key))
    certificate.cert_chain_pems[0].write_to_path(str(chain))
    for pem in certificate.cert_chain_pems[1:]:
        pem.write_to_path(str(chain), append=True)

    @contextlib.contextmanager
    def start(**settings: object) -> Iterator[str]:
        with server_factory(ssl_certfile=chain, ssl_keyfile=key, **settings) as url:
            yield url.replace("http://", "https://")

    return start


@pytest.fixture
def tls_url(tls_server: Callable[..., contextlib.AbstractContextManager[str]]) -> Iterator[str]:
    with tls_server() as url:
        yield url


def test_https_is_served_and_plain_http_is_not(authority: trustme.CA, tls_url: str) -> None:
    context = ssl.create_default_context()
    authority.configure_trust(context)
    with httpx.Client(verify=context) as client:
        answer = client.get(f"{tls_url}/readyz")
        assert answer.status_code == 200 and answer.json()["status"] == "ready"
        assert answer.headers["x-request-id"]
    with httpx.Client() as plain, pytest.raises(httpx.TransportError):
        plain.get(tls_url.replace("https://", "http://") + "/readyz")


# The SDK reads ``ConnectionClosed.code`` (deprecated by websockets 13.1) at every normal end of
# its stream: its warning, not voxflow's.
@pytest.mark.filterwarnings("ignore:ConnectionClosed.code is deprecated:DeprecationWarning")
def test_the_elevenlabs_sdk_streams_over_wss(
    authority: trustme.CA, tls_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The SDK makes its own SSL context: it trusts the certificate authorities OpenSSL's default
    # paths name, which SSL_CERT_FILE sets.
    bundle = tmp_path / "ca.pem"
    authority.cert_pem.write_to_path(str(bundle))
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
    with httpx.Client(verify=ssl.create_default_context(cafile=str(bundle))) as http:
        client = ElevenLabs(api_key="any", base_url=tls_url, httpx_client=http)
        chunks = client.text_to_speech.convert_realtime(
            voice_id=EL_VOICE,
            text=iter(["Hello there. ", "The connection ", "is encrypted today."]),
            output_format="pcm_16000",
        )
        audio = b"".join(chunks)
    # Three clauses of speech: well over a second of 16 kHz 16-bit audio.
    assert len(audio) % 2 == 0 and len(audio) / 32_000 > 1.0


def session_after_one_request(authority: trustme.CA, url: str) -> ssl.SSLSession:
    """The TLS session of a connection that made one request and read its whole answer (the
    session tickets a server sends come right after the handshake, before any answer)."""
    context = ssl.create_default_context()
    authority.configure_trust(context)
    port = int(url.rsplit(":", 1)[1])
    with (
        socket.create_connection(("127.0.0.1", port), timeout=10) as raw,
        context.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
    ):
        assert tls.version() == "TLSv1.3"
        tls.sendall(b"GET /readyz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        answer = b""
        while chunk := tls.recv(65536):
            answer += chunk
        assert answer.startswith(b"HTTP/1.1 200")
        session = tls.session
        assert session is not None
        return session


def test_no_session_tickets_are_sent_unless_asked_for(
    authority: trustme.CA, tls_server: Callable[..., contextlib.AbstractContextManager[str]]
) -> None:
    with tls_server() as url:
        assert not session_after_one_request(authority, url).has_ticket
    with tls_server(ssl_session_tickets=2) as url:
        assert session_after_one_request(authority, url).has_ticket


def test_session_tickets_are_a_count() -> None:
    assert ServerSettings.from_env({"VOXFLOW_SSL_SESSION_TICKETS": "2"}).ssl_session_tickets == 2
    with pytest.raises(ValueError, match="ssl_session_tickets"):
        ServerSettings(ssl_session_tickets=-1)


def test_a_certificate_needs_its_key() -> None:
    with pytest.raises(ValueError, match="both"):
        ServerSettings(ssl_certfile=Path("chain.pem"))
