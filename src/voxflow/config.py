"""Server settings: one frozen object, built once (CLI flags or ``VOXFLOW_*`` variables) and
passed in."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path


def default_workers() -> int:
    """One worker per core: each runs one ONNX Runtime job on one thread."""
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1)


# The settings that say which voices a server has and where their models are kept. An engine
# handed to ``create_app`` brings its own voices, so with one these stay at their defaults.
VOICE_SOURCE_FIELDS = ("voices_dir", "kokoro", "kokoro_voices_dir", "voice_aliases", "split_cache")

# -- access control and logs (issue 11) --
LOG_LEVELS = ("debug", "info", "warning", "error")
_ORIGIN = re.compile(r"https?://[^/?#\s]+", re.IGNORECASE)  # what a browser sends: no path
_HOST = re.compile(r"\*|[A-Za-z0-9_.-]+|\[[0-9A-Fa-f:.]+\]|[0-9A-Fa-f:]+")


def check_api_key(key: str) -> None:
    """A key travels in a header: printable ASCII without spaces, or a client could not send it."""
    if not key or not all("!" <= char <= "~" for char in key):
        raise ValueError("an API key must be non-empty printable ASCII without spaces")


@dataclass(frozen=True)
class ServerSettings:
    host: str = "127.0.0.1"
    port: int = 8000
    voices_dir: Path | None = None
    default_voice: str | None = None  # None: the bundled voice
    default_format: str = "pcm_24000"
    workers: int = 0  # 0: one per core
    max_contexts_per_connection: int = 16
    max_message_chars: int = 10_000
    # Bytes of client events queued on a connection (its audio as it goes on the wire) above
    # which its streams stop rendering until the client has read them: what a client that reads
    # slowly, or not at all, costs the server (connection.driver). One that reads nothing is closed
    # once four times this waits (what its streams had in flight when they stopped).
    outbound_bytes: int = 1 << 20
    write_timeout_s: float = 10.0  # a send that takes longer closes the connection
    idle_flush_s: float | None = None  # flush buffered text after this much silence
    max_lead_s: float = 20.0  # a stream this far ahead of its client's playback waits
    # ... but a context that owes audio sends some at least this often, however far ahead it is:
    # client frameworks end a context that is quiet for a while (Pipecat: 3 s). The metrics count
    # a longer silence as a quiet gap.
    max_quiet_s: float = 1.5
    sentence_pause_ms: float = 250.0  # silence between a sentence's end and the next one's speech
    lexicon_path: Path | None = None  # server-wide pronunciation lexicon (word<TAB>respelling)
    # Where ElevenLabs' pronunciation dictionaries are kept (server/dictionaries.py); replicas
    # that share it share them. None: the dictionary endpoints answer dictionaries_disabled.
    dictionaries_dir: Path | None = None
    wyoming_uri: str | None = None  # e.g. tcp://0.0.0.0:10200 to also serve Wyoming (off)
    # On SIGTERM: how long live connections may take to finish before they are cut off.
    drain_s: float = 10.0
    # -- connection limits and timeouts (issue 11) --
    # What one client may hold; docs/operations.md lists each with what a client sees.
    header_timeout_s: float = 10.0  # a request head (line and headers) must be in within this
    body_timeout_s: float = 30.0  # a request body must be in whole within this of its head
    keepalive_timeout_s: float = 5.0  # an idle keep-alive connection is closed after this
    max_header_bytes: int = 64 << 10  # a longer request head: 431
    max_body_bytes: int = 1 << 20  # a larger request body: 413 (a 10,000-character text is <60 KB)
    # Open HTTP and WebSocket connections. Past it only /healthz, /readyz and /metrics are
    # served, on up to health_reserve more. 0: what the open-file limit leaves room for.
    max_connections: int = 0
    health_reserve: int = 32
    ws_max_message_bytes: int = 256 << 10  # a larger WebSocket message: close 1009
    ws_ping_interval_s: float = 20.0  # a WebSocket whose pong takes over ws_ping_timeout_s closes
    ws_ping_timeout_s: float = 20.0
    wyoming_max_line_bytes: int = 1 << 20  # a Wyoming event's header line
    wyoming_max_data_bytes: int = 1 << 20  # its data part (a synthesize text is <60 KB)
    wyoming_max_payload_bytes: int = 1 << 20  # its payload (a TTS server is sent none)
    # -- admission control (issues 11, 28, 39) --
    # A new stream (an open context, any protocol) is admitted while the streams that speak,
    # each counted at its engine's measured cost per second of audio, and it stay within a
    # capacity learnt from the workers' slack against their listeners (session.load_limit);
    # past it, it is refused (HTTP 429, native concurrency_limited). max_load is the ceiling
    # of that capacity, as a share of the workers' time: 1 (the default) leaves only the
    # cores, a lower one is an operator's cap. 0: no cost limit at all.
    max_load: float = 1.0
    # Open streams at most, besides (0: no count).
    max_streams: int = 0
    retry_after_s: float = 1.0  # the wait a refused client is told before it retries
    # -- access control and logs (issue 11) --
    # Keys a client must present (Bearer, xi-api-key or ?api_key=); empty: no authentication,
    # the friendly default on a laptop. /healthz, /readyz and the demo page never need one.
    api_keys: tuple[str, ...] = ()
    api_keys_file: Path | None = None  # more keys, one a line (# comments); read at start-up
    # Web page origins allowed (WebSockets, POSTs) besides the server's own and loopback ("*": any).
    allowed_origins: tuple[str, ...] = ()
    # Host names answered besides localhost/127.0.0.1/[::1]; the Host check (against DNS
    # rebinding) is on when bound to loopback or when this is set ("*": no check).
    allowed_hosts: tuple[str, ...] = ()
    log_level: str = "info"  # debug, info, warning, error
    log_format: str = "text"  # text, or json: one object per line
    # -- TLS (issue 12) --
    # A certificate chain and its key (PEM): HTTPS and wss:// on the same port, as uvicorn's
    # --ssl-certfile/--ssl-keyfile; some clients (the elevenlabs SDK's realtime) only speak wss://.
    ssl_certfile: Path | None = None
    ssl_keyfile: Path | None = None
    # TLS 1.3 session tickets sent after each handshake (resumption for clients that keep them).
    # 0 by default: a ticket lands while a threaded client (the elevenlabs SDK's realtime, any
    # websockets sync client) writes its handshake request, and its TLS socket, read and written
    # from two threads at once, can lose that request (server.uvicorn_config).
    ssl_session_tickets: int = 0
    # -- phrase cache (issue 13) --
    # Rendered phrases kept in this process (bytes; 0: no cache at all), and the shared tier
    # every replica sees (redis://host:port/db; None: none). A phrase is kept on its second
    # request, or when warmed or prefetched (runtime.cache).
    cache_bytes: int = 64 << 20
    cache_url: str | None = None
    cache_ttl_s: float = 7 * 24 * 3600.0  # how long the shared tier keeps a phrase
    cache_timeout_s: float = 0.05  # a shared-tier call that takes longer is a miss
    warm_path: Path | None = None  # phrases to render at start-up, one a line (--warm)
    # -- the Kokoro engine (docs/kokoro.md) --
    kokoro: bool = False  # offer the kokoro: voices (needs the kokoro extra and its voices)
    kokoro_voices_dir: Path | None = None  # None: where make kokoro-voices installs them
    # What one Kokoro stream holds of a count cap (--max-streams; a Piper stream holds one):
    # admission by cost counts it at its own learnt cost whatever this is.
    kokoro_stream_slots: int = 2
    # A voice to speak with instead when a Kokoro stream finds no room (None: refuse it, as any
    # stream past the limit is refused).
    kokoro_fallback_voice: str | None = None
    # name=voice pairs: clients' voice names (OpenAI's "alloy") to voices of this server.
    voice_aliases: tuple[str, ...] = ()
    # Where the voices' cut and optimized models are kept between starts (engines.split_cache): auto
    # ($XDG_CACHE_HOME/voxflow/splits or ~/.cache/voxflow/splits), off, or a directory.
    split_cache: str = "auto"

    def __post_init__(self) -> None:
        if not 0 < self.port < 65536:
            raise ValueError(f"port must be 1..65535, got {self.port}")
        if self.workers < 0:
            raise ValueError("workers must be >= 0")
        if self.write_timeout_s <= 0:
            raise ValueError("write_timeout_s must be > 0")
        if self.drain_s <= 0:
            raise ValueError("drain_s must be > 0")
        if self.max_streams < 0:
            raise ValueError("max_streams must be >= 0")
        if not 0 <= self.max_load <= 1:
            raise ValueError("max_load must be within [0, 1] (0: no limit)")
        if self.retry_after_s <= 0:
            raise ValueError("retry_after_s must be > 0")
        if self.max_lead_s <= 0:
            raise ValueError("max_lead_s must be > 0")
        if self.max_quiet_s <= 0:
            raise ValueError("max_quiet_s must be > 0")
        if self.idle_flush_s is not None and self.idle_flush_s <= 0:
            raise ValueError("idle_flush_s must be > 0")
        self._check_connection_limits()
        self._check_access_and_logs()
        if (self.ssl_certfile is None) != (self.ssl_keyfile is None):
            raise ValueError("TLS needs both ssl_certfile and ssl_keyfile")
        if self.ssl_session_tickets < 0:
            raise ValueError("ssl_session_tickets must be >= 0")
        if self.cache_bytes < 0:
            raise ValueError("cache_bytes must be >= 0 (0: no phrase cache)")
        if self.cache_ttl_s <= 0 or self.cache_timeout_s <= 0:
            raise ValueError("cache_ttl_s and cache_timeout_s must be > 0")
        if self.cache_url is not None and not self.cache_url.startswith(("redis://", "rediss://")):
            raise ValueError(
                f"cache_url must be redis://... or rediss://..., got {self.cache_url!r}"
            )
        if self.cache_url is not None and self.cache_bytes == 0:
            raise ValueError("a shared cache (cache_url) needs the memory cache (cache_bytes > 0)")
        if not self.split_cache.strip():
            raise ValueError("split_cache must be auto, off or a directory")
        if self.kokoro_stream_slots < 1:
            raise ValueError("kokoro_stream_slots must be >= 1")
        self.aliases()  # refuse a malformed pair now

    def voice_sources(self) -> tuple[str, ...]:
        """The settings of ``VOICE_SOURCE_FIELDS`` set to anything but their defaults."""
        defaults = {field.name: field.default for field in fields(self)}
        return tuple(name for name in VOICE_SOURCE_FIELDS if getattr(self, name) != defaults[name])

    def aliases(self) -> dict[str, str]:
        """``voice_aliases`` as a mapping (``ValueError`` for a pair without ``=``)."""
        pairs: dict[str, str] = {}
        for pair in self.voice_aliases:
            name, sep, voice = pair.partition("=")
            if not sep or not name.strip() or not voice.strip():
                raise ValueError(f"a voice alias is name=voice, got {pair!r}")
            pairs[name.strip()] = voice.strip()
        return pairs

    def _check_access_and_logs(self) -> None:
        for name in ("api_keys", "allowed_origins", "allowed_hosts"):
            value = getattr(self, name)
            if isinstance(value, str):  # tuple("key") would be one key per character
                raise TypeError(f"{name} must be a sequence of strings, not a string")
            object.__setattr__(self, name, tuple(value))  # a list from a caller: keep it hashable
        for key in self.api_keys:
            check_api_key(key)
        for origin in self.allowed_origins:
            if origin != "*" and not _ORIGIN.fullmatch(origin):
                raise ValueError(f"allowed origin must be scheme://host[:port] or *: {origin!r}")
        for host in self.allowed_hosts:
            if not _HOST.fullmatch(host):
                raise ValueError(f"allowed host must be a host name without port, got {host!r}")
        object.__setattr__(self, "log_level", self.log_level.lower())  # INFO works too
        if self.log_level not in LOG_LEVELS:
            raise ValueError(f"log_level must be one of {', '.join(LOG_LEVELS)}")
        if self.log_format not in ("text", "json"):
            raise ValueError("log_format must be text or json")

    def _check_connection_limits(self) -> None:
        positive = (
            "header_timeout_s",
            "body_timeout_s",
            "keepalive_timeout_s",
            "max_header_bytes",
            "max_body_bytes",
            "ws_max_message_bytes",
            "ws_ping_interval_s",
            "ws_ping_timeout_s",
            "wyoming_max_line_bytes",
            "wyoming_max_data_bytes",
            "wyoming_max_payload_bytes",
            "outbound_bytes",
        )
        for name in positive:
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be > 0")
        if self.max_connections < 0:
            raise ValueError("max_connections must be >= 0 (0: from the open-file limit)")
        if self.health_reserve < 0:
            raise ValueError("health_reserve must be >= 0")

    @property
    def worker_threads(self) -> int:
        return self.workers or default_workers()

    @property
    def capacity_ceiling(self) -> float:
        """CPU seconds a second (cores) the learnt capacity may reach (0: no cost limit)."""
        return self.max_load * self.worker_threads

    @classmethod
    def from_env(cls, env: Mapping[str, str], **overrides: object) -> ServerSettings:
        """Settings from ``VOXFLOW_<FIELD>`` variables, then ``overrides`` (non-None) on top."""
        values: dict[str, object] = {}
        for field in fields(cls):
            raw = env.get(f"VOXFLOW_{field.name.upper()}")
            if raw is None:
                continue
            default = getattr(cls, field.name)
            if field.name in (
                "voices_dir",
                "lexicon_path",
                "dictionaries_dir",
                "api_keys_file",
                "ssl_certfile",
                "ssl_keyfile",
                "warm_path",
                "kokoro_voices_dir",
            ):
                values[field.name] = Path(raw)
            elif isinstance(default, bool):
                values[field.name] = raw.strip().lower() in ("1", "true", "yes", "on")
            elif field.name == "idle_flush_s" or isinstance(default, float):
                values[field.name] = float(raw)
            elif isinstance(default, int):
                values[field.name] = int(raw)
            elif isinstance(default, tuple):  # a comma-separated list
                values[field.name] = tuple(part.strip() for part in raw.split(",") if part.strip())
            else:
                values[field.name] = raw
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)  # type: ignore[arg-type]
