"""``voxflow serve``: its options (server, admission, access control, logs, connection limits)
and the server's start, with a graceful drain on SIGTERM."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from voxflow.config import LOG_LEVELS, ServerSettings, default_workers

__all__ = [
    "access_overrides",
    "add_serve_parser",
    "cache_overrides",
    "kokoro_overrides",
    "limit_overrides",
    "serve",
]

# glibc's heaps per core for the server process (its default is eight): runtime.memory.
MALLOC_ARENAS_PER_CORE = 1


def add_serve_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    serve_cmd = commands.add_parser("serve", help="run the server")
    serve_cmd.add_argument("--host", help="address to bind (default 127.0.0.1)")
    serve_cmd.add_argument("--port", type=int, help="port (default 8000)")
    serve_cmd.add_argument("--workers", type=int, help="synthesis threads (default: one per core)")
    serve_cmd.add_argument("--default-voice", help="voice used when a request names none")
    serve_cmd.add_argument(
        "--idle-flush", type=float, dest="idle_flush_s", help="flush text idle this many seconds"
    )
    serve_cmd.add_argument(
        "--lexicon",
        type=Path,
        dest="lexicon_path",
        help="server-wide pronunciation lexicon: word<TAB>respelling lines, or a PLS file",
    )
    serve_cmd.add_argument(
        "--dictionaries-dir",
        type=Path,
        dest="dictionaries_dir",
        help="directory that keeps pronunciation dictionaries (ElevenLabs' API); replicas may "
        "share it (default: none, dictionaries disabled)",
    )
    serve_cmd.add_argument(
        "--wyoming",
        dest="wyoming_uri",
        metavar="URI",
        help="also serve the Wyoming protocol (Home Assistant), e.g. tcp://0.0.0.0:10200",
    )
    serve_cmd.add_argument(
        "--max-load",
        type=float,
        dest="max_load",
        help="ceiling of the capacity admission learns from the workers' slack, as a share of "
        "their time (streams counted at their engines' measured costs); past the capacity a "
        "new stream gets 429 (default 1: only the cores; 0: no cost limit)",
    )
    serve_cmd.add_argument(
        "--max-streams",
        type=int,
        dest="max_streams",
        help="open streams admitted at once, besides (default: no count)",
    )
    serve_cmd.add_argument(
        "--drain",
        type=float,
        dest="drain_s",
        help="on SIGTERM, seconds streams may take to finish (default 10)",
    )
    serve_cmd.add_argument(
        "--ssl-certfile",
        type=Path,
        metavar="PEM",
        help="serve HTTPS and wss:// with this certificate chain (needs --ssl-keyfile)",
    )
    serve_cmd.add_argument(
        "--ssl-keyfile", type=Path, metavar="PEM", help="the private key of --ssl-certfile"
    )
    serve_cmd.add_argument(
        "--ssl-session-tickets",
        type=int,
        metavar="N",
        help="TLS 1.3 session tickets sent after each handshake, for clients that resume "
        "sessions (default 0: threaded clients can lose their first message to one)",
    )
    _add_cache_options(serve_cmd)
    _add_kokoro_options(serve_cmd)
    _add_access_options(serve_cmd)
    _add_limit_options(serve_cmd)


def _add_cache_options(serve: argparse.ArgumentParser) -> None:
    cache = serve.add_argument_group("phrase cache (docs/operations.md)")
    cache.add_argument(
        "--cache-bytes",
        type=int,
        dest="cache_bytes",
        help="memory for rendered phrases, in bytes (default 64 MiB; 0: no cache)",
    )
    cache.add_argument(
        "--cache-url",
        dest="cache_url",
        metavar="URL",
        help="shared tier every replica sees: redis://host:port/db (default: none)",
    )
    cache.add_argument(
        "--cache-ttl",
        type=float,
        dest="cache_ttl_s",
        help="seconds the shared tier keeps a phrase (default one week)",
    )
    cache.add_argument(
        "--warm",
        type=Path,
        dest="warm_path",
        metavar="FILE",
        help="render these phrases (one a line) into the cache at start-up",
    )


def _add_kokoro_options(serve: argparse.ArgumentParser) -> None:
    kokoro = serve.add_argument_group("voices and the Kokoro engine (docs/kokoro.md)")
    kokoro.add_argument(
        "--kokoro",
        action="store_true",
        default=None,
        help="offer the kokoro: voices (make serve KOKORO=1 installs them)",
    )
    kokoro.add_argument(
        "--kokoro-voices",
        type=Path,
        dest="kokoro_voices_dir",
        metavar="DIR",
        help="Kokoro style packs (default: where make kokoro-voices installs them)",
    )
    kokoro.add_argument(
        "--kokoro-slots",
        type=int,
        dest="kokoro_stream_slots",
        metavar="N",
        help="admission slots one Kokoro stream holds (default 2)",
    )
    kokoro.add_argument(
        "--kokoro-fallback",
        dest="kokoro_fallback_voice",
        metavar="VOICE",
        help="speak with VOICE instead when a Kokoro stream finds no room (default: refuse)",
    )
    kokoro.add_argument(
        "--split-cache",
        dest="split_cache",
        metavar="DIR",
        help="keep the voices' cut and optimized models here between starts: auto (default: "
        "~/.cache/voxflow/splits), off, or a directory",
    )
    kokoro.add_argument(
        "--voice-alias",
        action="append",
        dest="voice_aliases",
        metavar="NAME=VOICE",
        help="let clients' voice NAME select VOICE, e.g. alloy=kokoro:af_alloy (repeatable)",
    )


def kokoro_overrides(args: argparse.Namespace) -> dict[str, object]:
    overrides: dict[str, object] = {
        name: getattr(args, name)
        for name in (
            "kokoro",
            "kokoro_voices_dir",
            "kokoro_stream_slots",
            "kokoro_fallback_voice",
            "split_cache",
        )
    }
    if args.voice_aliases is not None:
        overrides["voice_aliases"] = tuple(args.voice_aliases)
    return overrides


def cache_overrides(args: argparse.Namespace) -> dict[str, object]:
    return {
        name: getattr(args, name)
        for name in ("cache_bytes", "cache_url", "cache_ttl_s", "warm_path")
    }


def _add_access_options(serve: argparse.ArgumentParser) -> None:
    """Access control and logs (issue 11); README's "Public deployment" says when to use each."""
    serve.add_argument(
        "--api-key",
        action="append",
        dest="api_keys",
        metavar="KEY",
        help="require this API key (repeatable; default: no authentication)",
    )
    serve.add_argument(
        "--api-keys-file", type=Path, metavar="PATH", help="more API keys, one a line (# comments)"
    )
    serve.add_argument(
        "--allowed-origin",
        action="append",
        dest="allowed_origins",
        metavar="ORIGIN",
        help="also accept WebSockets from pages of this origin, e.g. https://app.example (or *)",
    )
    serve.add_argument(
        "--allowed-host",
        action="append",
        dest="allowed_hosts",
        metavar="NAME",
        help="also answer to this Host name (checked when bound to loopback or when given)",
    )
    serve.add_argument("--log-level", choices=LOG_LEVELS, help="default info (-v: debug)")
    serve.add_argument(
        "--log-format", choices=("text", "json"), help="json: one object a line (default text)"
    )


def access_overrides(args: argparse.Namespace) -> dict[str, object]:
    """The access control and log flags; None leaves the ``VOXFLOW_*`` variable's value."""

    def listed(values: list[str] | None) -> tuple[str, ...] | None:
        return tuple(values) if values else None

    return {
        "api_keys": listed(args.api_keys),
        "api_keys_file": args.api_keys_file,
        "allowed_origins": listed(args.allowed_origins),
        "allowed_hosts": listed(args.allowed_hosts),
        "log_level": args.log_level or ("debug" if args.verbose else None),
        "log_format": args.log_format,
    }


# -- connection limits and timeouts (issue 11): the ones an operator tunes; the rest (WebSocket
# and Wyoming sizes, pings) are VOXFLOW_* variables only (docs/operations.md).
_LIMIT_FLAGS = (
    ("--header-timeout", "header_timeout_s", float, "close a client whose request head is late"),
    ("--body-timeout", "body_timeout_s", float, "408 a request whose body is not in by then"),
    ("--keepalive-timeout", "keepalive_timeout_s", float, "close idle keep-alive connections"),
    ("--max-body-bytes", "max_body_bytes", int, "413 a larger request body"),
    ("--max-connections", "max_connections", int, "open connections (0: from the fd limit)"),
    ("--health-reserve", "health_reserve", int, "connections past the cap for health checks"),
    ("--outbound-bytes", "outbound_bytes", int, "bytes queued to a client before it is waited for"),
)


def _add_limit_options(parser: argparse.ArgumentParser) -> None:
    for flag, dest, kind, help_text in _LIMIT_FLAGS:
        parser.add_argument(flag, type=kind, dest=dest, help=help_text)


def limit_overrides(args: argparse.Namespace) -> dict[str, object]:
    return {dest: getattr(args, dest) for _, dest, _, _ in _LIMIT_FLAGS}


def serve(args: argparse.Namespace) -> int:
    """``voxflow serve``."""
    # The server stack is imported only when serving: it doubles the start-up time of the CLI.
    from voxflow.runtime.memory import (  # noqa: PLC0415
        freeze_startup_objects,
        limit_malloc_arenas,
    )
    from voxflow.server.app import create_app  # noqa: PLC0415
    from voxflow.server.draining import DrainingServer  # noqa: PLC0415
    from voxflow.server.limits import raise_open_file_limit  # noqa: PLC0415
    from voxflow.server.logs import configure_logging  # noqa: PLC0415
    from voxflow.server.ready import log_ready  # noqa: PLC0415
    from voxflow.server.security import configured_keys  # noqa: PLC0415
    from voxflow.server.uvicorn_config import uvicorn_config  # noqa: PLC0415

    settings = ServerSettings.from_env(
        os.environ,
        host=args.host,
        port=args.port,
        voices_dir=args.voices_dir,
        workers=args.workers,
        default_voice=args.default_voice,
        idle_flush_s=args.idle_flush_s,
        wyoming_uri=args.wyoming_uri,
        lexicon_path=args.lexicon_path,
        dictionaries_dir=args.dictionaries_dir,
        max_streams=args.max_streams,
        max_load=args.max_load,
        drain_s=args.drain_s,
        ssl_certfile=args.ssl_certfile,
        ssl_keyfile=args.ssl_keyfile,
        ssl_session_tickets=args.ssl_session_tickets,
        **access_overrides(args),
        **limit_overrides(args),
        **cache_overrides(args),
        **kokoro_overrides(args),
    )
    # One handler for every logger, uvicorn's included: request ids, no keys or query strings.
    keys = configured_keys(settings)
    configure_logging(settings, keys)
    # Before any worker thread exists: a heap per core, not eight, so that freed memory is not
    # scattered across heaps where trimming cannot return it (docs/reliability.md, the soak).
    limit_malloc_arenas(MALLOC_ARENAS_PER_CORE * default_workers())
    app = create_app(settings)
    # The connection cap is sized to the open-file limit, raised to the hard limit first.
    config = uvicorn_config(
        app,
        settings,
        fd_limit=raise_open_file_limit(),
        log_level=settings.log_level,
        log_config=None,  # configure_logging's handler, not uvicorn's (which would print keys)
        # SIGTERM drains first (server.draining): by the time uvicorn's own shutdown runs, every
        # connection has had its last words; this only bounds what uvicorn waits for after that.
        timeout_graceful_shutdown=2,
    )

    def started() -> None:
        # What start-up made lives as long as the process: out of the garbage collector's walks,
        # which would otherwise stall the event loop for up to 90 ms in a burst of connections.
        freeze_startup_objects()
        # Then the URLs to open, on the port really bound (last: it is the line people read).
        log_ready(server, settings, bool(keys))

    server = DrainingServer(
        config, lambda: getattr(app.state, "drain", None), settings.drain_s, on_started=started
    )
    server.run()
    return 0
