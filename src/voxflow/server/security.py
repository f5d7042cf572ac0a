"""Access control before any protocol runs, and the demo page's security headers.

``SecurityMiddleware`` is pure ASGI: the scope goes through unchanged (the HTTP adapter reads its
abort there) and ``send`` is wrapped only to add headers to the demo page's head, so streamed
bodies pass as they are. For each HTTP request and WebSocket handshake, in this order:

1. **Host** (against DNS rebinding): on a server bound to loopback, or with ``allowed_hosts``
   set, a ``Host`` other than localhost, 127.0.0.1, [::1] or an allowed name is refused with
   403 ``forbidden_host``: a page of evil.example whose name was rebound to 127.0.0.1 cannot
   drive the server from the visitor's browser.
2. **Origin**: browsers let any page open a WebSocket, or send a simple POST, to any address
   the visitor can reach, the laptop's 127.0.0.1 included. An ``Origin`` that is not the
   server's own (same host and port as ``Host``), a loopback page or an allowed origin is refused
   with 403 ``forbidden_origin``. No ``Origin`` (a program, or a browser's same-origin GET)
   passes. (voxflow sends no CORS headers, so an allowed foreign page still cannot read an HTTP
   answer; WebSockets have no such guard, which is what the allow-list is for.)
3. **API key**, when keys are configured: ``Authorization: Bearer KEY`` (OpenAI SDK, Cartesia
   SDK), ``Authorization: Token KEY`` (Deepgram's clients), ``xi-api-key: KEY`` (ElevenLabs'),
   ``X-API-Key: KEY`` (Pipecat's and LiveKit's Cartesia services) or, for browsers that cannot
   set a WebSocket's headers,
   the query parameter ``api_key``, ``xi_api_key`` or ``authorization`` (ElevenLabs' WebSocket
   name; ``Bearer `` prefix optional). Missing or wrong: 401 ``unauthorized`` with
   ``WWW-Authenticate: Bearer``. Keys are compared as SHA-256 digests in constant time.

``/healthz`` and ``/readyz`` skip every check (probes address a pod by IP and carry no key; they
reveal nothing); the demo page (``/``, ``/static/``) needs no key but passes the Host check.

A request that passes with a key carries the key's owner name in its scope
(``transports.owner``), which keeps one key's pronunciation dictionaries from another's.

A refused HTTP request gets the error object of the protocol its path belongs to: OpenAI's for
``/v1/audio/`` and ``/v1/models``, ElevenLabs' ``{"detail": ...}`` for ``/v1/text-to-speech/``,
the voices and the pronunciation dictionaries, Cartesia's for ``/tts/``, Deepgram's for
``/v1/speak``,
``{"error": {"code", "message"}}`` elsewhere. A refused WebSocket is never accepted: the
handshake is answered with the same status and body (ASGI's ``websocket.http.response``
extension, which uvicorn has); a server without it answers a plain 403.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from voxflow.config import ServerSettings, check_api_key
from voxflow.server.logs import HANDSHAKE_REFUSED, REQUEST_ID
from voxflow.session.errors import SessionError
from voxflow.transports.cartesia.errors import http_error as cartesia_error
from voxflow.transports.deepgram.errors import http_error as deepgram_error
from voxflow.transports.elevenlabs.errors import http_error
from voxflow.transports.openai.errors import openai_error
from voxflow.transports.owner import OWNER_SCOPE_KEY

__all__ = [
    "DEMO_HEADERS",
    "AccessPolicy",
    "SecurityMiddleware",
    "configured_keys",
    "read_api_keys_file",
]

log = logging.getLogger(__name__)

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
OPEN_PATHS = frozenset({"/healthz", "/readyz"})  # no check at all
QUERY_KEY_NAMES = ("api_key", "xi_api_key", "authorization")
STATUS = {"unauthorized": 401, "forbidden_origin": 403, "forbidden_host": 403}
_DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}

# The demo page loads its own scripts and styles (ES modules, no inline code), a data: icon, and
# talks to its own origin (fetch and the WebSocket: CSP3's 'self' covers ws:/wss: to it).
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'"
)
DEMO_HEADERS = (
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
)


def read_api_keys_file(path: Path) -> tuple[str, ...]:
    """One key a line; blank lines and lines starting with ``#`` are skipped."""
    keys = []
    for line in path.read_text(encoding="utf-8").splitlines():
        key = line.strip()
        if key and not key.startswith("#"):
            check_api_key(key)
            keys.append(key)
    if not keys:
        # An empty file would silently turn authentication off.
        raise ValueError(f"no API key in {path}")
    return tuple(keys)


def configured_keys(settings: ServerSettings) -> tuple[str, ...]:
    """``api_keys`` and the keys of ``api_keys_file``, together."""
    keys = settings.api_keys
    if settings.api_keys_file is not None:
        keys += read_api_keys_file(settings.api_keys_file)
    return keys


def is_loopback(host: str) -> bool:
    name = host.strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _split_host(value: str) -> tuple[str, int | None]:
    """``Host`` header -> (lower-case name without brackets or final dot, port or None)."""
    value = value.strip().lower()
    if value.startswith("["):
        name, _, rest = value[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
    elif value.count(":") == 1:
        name, _, port = value.partition(":")
    else:
        name, port = value, ""
    return name.rstrip("."), int(port) if port.isdigit() else None


def _origin(value: str) -> tuple[str, str, int] | None:
    """An origin as (scheme, host, port with the scheme's default), or None if it is not one
    (``null``, from a sandboxed frame or a file, is not)."""
    try:
        parts = urlsplit(value.strip().lower())
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    return parts.scheme, parts.hostname.rstrip("."), port or _DEFAULT_PORTS[parts.scheme]


@dataclass(frozen=True)
class AccessPolicy:
    key_digests: tuple[bytes, ...]  # empty: no authentication
    check_host: bool
    allowed_hosts: frozenset[str]
    any_origin: bool
    allowed_origins: frozenset[tuple[str, str, int]]

    @classmethod
    def from_settings(cls, settings: ServerSettings) -> AccessPolicy:
        keys = configured_keys(settings)
        hosts = {_split_host(host)[0] for host in settings.allowed_hosts}
        origins = {_origin(origin) for origin in settings.allowed_origins if origin != "*"}
        policy = cls(
            key_digests=tuple(_digest(key) for key in keys),
            check_host="*" not in hosts and (is_loopback(settings.host) or bool(hosts)),
            allowed_hosts=frozenset(LOOPBACK_NAMES | hosts),
            any_origin="*" in settings.allowed_origins,
            allowed_origins=frozenset(origin for origin in origins if origin is not None),
        )
        log.info(
            "authentication %s; Host check %s",
            f"on ({len(keys)} API key{'s' * (len(keys) > 1)})" if keys else "off (no API key)",
            "on" if policy.check_host else "off",
        )
        if not keys and not is_loopback(settings.host):
            log.warning(
                "serving %s without an API key: anyone who reaches it may use it (--api-key)",
                settings.host,
            )
        return policy

    def host_allowed(self, host: str | None) -> bool:
        # No Host (HTTP/1.0) is no browser: rebinding needs a browser, which always sends one.
        return not self.check_host or host is None or _split_host(host)[0] in self.allowed_hosts

    def origin_allowed(self, origin: str | None, host: str | None) -> bool:
        if origin is None or self.any_origin:
            return True
        parsed = _origin(origin)
        if parsed is None:
            return False
        scheme, name, port = parsed
        if name in LOOPBACK_NAMES or parsed in self.allowed_origins:
            return True
        if host is None:
            return False
        host_name, host_port = _split_host(host)
        # Same origin: the page came from this very host and port (a proxy in front keeps Host).
        return host_name == name and (host_port or _DEFAULT_PORTS[scheme]) == port

    def key_valid(self, candidates: Iterable[str]) -> bool:
        valid = False
        for candidate in candidates:
            digest = _digest(candidate)
            for key in self.key_digests:  # every key, every time: no early exit to time
                valid |= hmac.compare_digest(digest, key)
        return valid

    def owner(self, scope: Scope) -> str:
        """The owner name of the request's valid key (``transports.owner``), ``""`` without
        keys: a digest of the key under a label of its own, so it is not the digest the keys
        are checked by, and the same on every replica."""
        if not self.key_digests:
            return ""
        candidates = _key_candidates(Headers(scope=scope), scope.get("query_string", b""))
        for candidate in candidates:
            if self.key_valid((candidate,)):
                label = b"voxflow owner\0" + candidate.encode("utf-8", "surrogateescape")
                return hashlib.sha256(label).hexdigest()[:32]
        return ""

    def refusal(self, scope: Scope) -> SessionError | None:
        """Why this request or handshake is refused, or None."""
        headers = Headers(scope=scope)
        host = headers.get("host")
        if not self.host_allowed(host):
            return SessionError("forbidden_host", f"this server does not answer to Host {host!r}")
        if not self.origin_allowed(headers.get("origin"), host):
            return SessionError("forbidden_origin", "requests from this page's origin are refused")
        if self.key_digests and not _demo_path(scope["path"]):
            candidates = _key_candidates(headers, scope.get("query_string", b""))
            if not candidates:
                return SessionError(
                    "unauthorized",
                    "an API key is required: Authorization: Bearer KEY, xi-api-key: KEY, "
                    "X-API-Key: KEY or ?api_key=KEY",
                )
            if not self.key_valid(candidates):
                return SessionError("unauthorized", "invalid API key")
        return None


def _digest(key: str) -> bytes:
    # Equal-length digests: compare_digest then leaks nothing about a key's length either.
    return hashlib.sha256(key.encode("utf-8", "surrogateescape")).digest()


def _demo_path(path: str) -> bool:
    return path == "/" or path.startswith("/static/")


# ``Authorization`` schemes that carry a bare key: OAuth's, and Deepgram's ``Token KEY``.
_KEY_SCHEMES = ("bearer", "token")
# Headers whose whole value is a key: ElevenLabs' and Cartesia's (Pipecat, LiveKit).
_KEY_HEADERS = ("xi-api-key", "x-api-key")


def _strip_bearer(value: str) -> str:
    scheme, _, rest = value.strip().partition(" ")
    return rest.strip() if scheme.lower() in _KEY_SCHEMES and rest.strip() else value.strip()


def _key_candidates(headers: Headers, query_string: bytes) -> list[str]:
    candidates = [
        _strip_bearer(value)
        for value in headers.getlist("authorization")
        if value.strip().partition(" ")[0].lower() in _KEY_SCHEMES
    ]
    for name in _KEY_HEADERS:
        candidates += [value.strip() for value in headers.getlist(name)]
    query = parse_qsl(query_string.decode("latin-1"), keep_blank_values=False)
    candidates += [_strip_bearer(value) for name, value in query if name in QUERY_KEY_NAMES]
    return [candidate for candidate in candidates if candidate]


def _error_body(path: str, error: SessionError) -> tuple[int, bytes]:
    """The refusal in the shape of the protocol ``path`` belongs to."""
    if path.startswith(("/v1/audio/", "/v1/models")):
        openai = openai_error(error.code, error.message)
        return openai.status, json.dumps(openai.body, allow_nan=False).encode()
    if path.startswith(
        ("/v1/text-to-speech/", "/v1/voices", "/v2/voices", "/v1/pronunciation-dictionaries")
    ):
        eleven = http_error(error.code, error.message)
        return eleven.status, json.dumps(eleven.body, allow_nan=False).encode()
    if path.startswith("/tts/"):
        cartesia = cartesia_error(error.code, error.message)
        return cartesia.status, json.dumps(cartesia.body, allow_nan=False).encode()
    if path.startswith("/v1/speak"):
        deepgram = deepgram_error(error.code, error.message, REQUEST_ID.get() or "")
        return deepgram.status, json.dumps(deepgram.body, allow_nan=False).encode()
    body = {"error": {"code": error.code, "message": error.message}}
    return STATUS[error.code], json.dumps(body, allow_nan=False).encode()


async def _refuse(scope: Scope, send: Send, error: SessionError) -> None:
    status, body = _error_body(scope["path"], error)
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if error.code == "unauthorized":
        headers.append((b"www-authenticate", b"Bearer"))
    if scope["type"] == "http":
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})
    elif "websocket.http.response" in scope.get("extensions", {}):
        # Refused before the handshake completes: the client reads an HTTP status, never a 101.
        HANDSHAKE_REFUSED.set(True)  # kept after return: see logs.HANDSHAKE_REFUSED
        await send({"type": "websocket.http.response.start", "status": status, "headers": headers})
        await send({"type": "websocket.http.response.body", "body": body})
    else:
        await send({"type": "websocket.close", "code": 1008})  # before accept: HTTP 403


class SecurityMiddleware:
    def __init__(
        self,
        app: ASGIApp,
        policy: AccessPolicy,
        on_refused: Callable[[str], None] = lambda _reason: None,
    ) -> None:
        self.app = app
        self.policy = policy
        self.on_refused = on_refused  # by code: unauthorized, forbidden_origin, forbidden_host

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or scope["path"] in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        error = self.policy.refusal(scope)
        if error is not None:
            client = scope.get("client")
            log.info(
                "refused %s %s from %s: %s",
                "WebSocket" if scope["type"] == "websocket" else scope.get("method", "HTTP"),
                scope["path"],
                client[0] if client else "?",
                error.code,
            )
            self.on_refused(error.code)
            await _refuse(scope, send, error)
            return
        if scope["type"] == "http" and _demo_path(scope["path"]):
            send = _with_headers(send, DEMO_HEADERS)
        elif self.policy.key_digests:
            scope = {**scope, OWNER_SCOPE_KEY: self.policy.owner(scope)}
        await self.app(scope, receive, send)


def _with_headers(send: Send, extra: tuple[tuple[bytes, bytes], ...]) -> Send:
    async def send_with_headers(message: Message) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*(message.get("headers") or ()), *extra]}
        await send(message)

    return send_with_headers
