"""``voxflow bench-flood``: how fast a full server refuses a flood of new streams, and what the
flood does to the calls it admitted.

The server is full: ``admitted`` calls (default: its ``stream_limit``; start it with a small
``--max-streams``, or let admission by cost say how many), each a turn of a reply streamed as
LLM tokens and its audio played at real time (``calls.turn.run_turn``) until the caller barges
in after ``heard_s`` of it. In each round the first half of the calls open their turns and speak
for ``lead_s``; then the others open theirs, and once those are admitted (a native line's
``start`` is answered in order, ``calls.lines``) ``connections`` new connections open at once,
spread over the protocols in turn, each asking for a stream:

* ``openai``: ``POST /v1/audio/speech``; refused: status 429;
* ``native``: ``WS /v1/stream``, ``start`` and a probe; refused: the ``concurrency_limited``
  error;
* ``elevenlabs``: ``multi-stream-input``, a context's first text; refused: the
  ``too_many_concurrent_requests`` error;
* ``cartesia``: ``/tts/websocket``, one request; refused: the ``Too many concurrent requests``
  error;
* ``deepgram``: ``WS /v1/speak``; refused at the handshake (429).

A refusal is timed from the moment its connection is opened (before the TCP connect) to the
moment the refusal arrives (the status line, or the error frame). The client is a few lines of
raw HTTP and WebSocket framing on pre-built bytes, so that its own work on a shared machine
stays small beside the server's, and it runs in a process of its own (``Knocker``): a flood
comes from other clients than the calls', and in the calls' event loop each refusal's time
would also hold the calls' own work at that instant (the turns opened with the flood send their
first tokens then). Rounds alternate between *quiet* (the same calls, no flood) and
*flood*, so that what the admitted calls got is compared under the same drift of the machine:
the first audio of the turns opened with the flood (from their first token), and the gaps of
the turns speaking through it.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import multiprocessing
import os
import struct
import time
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode, urlsplit

from voxflow_bench.calls.lines import (
    CARTESIA_VOICE,
    ELEVEN_VOICE,
    LINES,
    REFUSALS,
    Line,
    LineEvent,
    open_line,
)
from voxflow_bench.calls.plan import CallPattern, CallScript
from voxflow_bench.calls.turn import TurnResult, run_turn
from voxflow_bench.corpus import Reply
from voxflow_bench.stats import Distribution, ratio

__all__ = [
    "FLOOD_PROTOCOLS",
    "FloodOptions",
    "FloodReport",
    "Gaps",
    "Knock",
    "Knocker",
    "format_flood",
    "knock",
    "run_flood",
    "stream_limit",
]

FLOOD_PROTOCOLS = ("openai", "native", "elevenlabs", "cartesia", "deepgram")
_TEXT = "Hello, thanks for calling."
_PROBE = "flood-probe"
_LONG_REPLY_CHARS = 100  # about 6 s of speech


@dataclass(frozen=True)
class FloodOptions:
    admitted: int = 4  # calls speaking when the flood comes (the server's limit)
    connections: int = 48  # opened at once, past the limit
    rounds: int = 5  # flood rounds; as many quiet ones interleaved
    protocols: tuple[str, ...] = FLOOD_PROTOCOLS
    admitted_protocol: str = "native"  # the only line whose admission is answered
    voice: str | None = None
    token_rate: float = 50.0
    timeout_s: float = 10.0  # a connection with no answer by then is a failure
    settle_s: float = 0.5  # between rounds
    # How long the first half of the calls speak before the others open their turns and the
    # flood comes: their first audio is out, they are playing.
    lead_s: float = 1.0
    # Audio each turn plays before its caller barges in (shorter turns make shorter rounds):
    # the speaking calls' turns go on through the flood.
    heard_s: float = 2.5

    def __post_init__(self) -> None:
        if self.admitted < 1 or self.connections < 1 or self.rounds < 1:
            raise ValueError("admitted, connections and rounds must be >= 1")
        if self.heard_s <= 0 or self.lead_s < 0:
            raise ValueError("heard_s must be > 0 and lead_s >= 0")
        unknown = set(self.protocols) - set(FLOOD_PROTOCOLS)
        if not self.protocols or unknown:
            raise ValueError(f"flood protocols must be among {', '.join(FLOOD_PROTOCOLS)}")
        if self.admitted_protocol not in LINES:
            raise ValueError(f"the admitted calls' line must be one of {', '.join(LINES)}")

    def as_dict(self) -> dict[str, object]:
        return {
            "admitted": self.admitted,
            "connections": self.connections,
            "rounds": self.rounds,
            "protocols": list(self.protocols),
            "admitted_protocol": self.admitted_protocol,
            "voice": self.voice,
            "token_rate": self.token_rate,
            "lead_s": self.lead_s,
            "heard_s": self.heard_s,
        }


@dataclass(frozen=True)
class Knock:
    """One flood connection: ``refused`` (``ms``: connect to refusal), ``admitted`` (the server
    took it: it was not full), or what went wrong."""

    protocol: str
    outcome: str
    ms: float | None = None


@dataclass(frozen=True)
class FloodReport:
    url: str
    options: FloodOptions
    knocks: tuple[Knock, ...]
    quiet_turns: tuple[TurnResult, ...]  # opened as the flood would come, in quiet rounds
    flood_turns: tuple[TurnResult, ...]  # opened as the flood came
    wall_s: float
    load: tuple[float, ...] = ()  # the machine's load average at the end (1, 5, 15 min)
    quiet_speaking: tuple[TurnResult, ...] = ()  # speaking when it would come
    flood_speaking: tuple[TurnResult, ...] = ()  # speaking when it came

    def refusals(self, protocol: str | None = None) -> Distribution:
        return Distribution.of(
            k.ms
            for k in self.knocks
            if k.outcome == "refused" and k.ms is not None and protocol in (None, k.protocol)
        )

    def ttfa(self, flood: bool) -> Distribution:
        """The first audio of the turns opened with the flood (or as it would have come)."""
        turns = self.flood_turns if flood else self.quiet_turns
        return Distribution.of(t.ttfa_ms for t in turns if t.ttfa_ms is not None)

    def gaps(self, flood: bool) -> Gaps:
        """What the listeners of the turns speaking through the flood heard."""
        return Gaps.of(self.flood_speaking if flood else self.quiet_speaking)

    def as_dict(self) -> dict[str, object]:
        by_protocol: dict[str, object] = {}
        for protocol in (*self.options.protocols, None):
            knocks = [k for k in self.knocks if protocol in (None, k.protocol)]
            by_protocol[protocol or "all"] = {
                "outcomes": _outcomes(knocks),
                "refusal_ms": self.refusals(protocol).as_dict(),
            }
        return {
            "url": self.url,
            "options": self.options.as_dict(),
            "wall_s": round(self.wall_s, 1),
            "load_average": [round(x, 2) for x in self.load],
            "refusals": by_protocol,
            "opening_ttfa_ms": {
                "quiet": self.ttfa(False).as_dict(),
                "flood": self.ttfa(True).as_dict(),
            },
            "speaking_gaps": {
                "quiet": self.gaps(False).as_dict(),
                "flood": self.gaps(True).as_dict(),
            },
            "admitted_outcomes": {
                "quiet": _outcomes((*self.quiet_turns, *self.quiet_speaking)),
                "flood": _outcomes((*self.flood_turns, *self.flood_speaking)),
            },
        }


@dataclass(frozen=True)
class Gaps:
    turns: int
    with_gap: int
    gap_ms: float
    longest_ms: float
    audio_ms: float

    @classmethod
    def of(cls, turns: Sequence[TurnResult]) -> Gaps:
        return cls(
            turns=len(turns),
            with_gap=sum(t.gaps > 0 for t in turns),
            gap_ms=sum(t.gap_ms for t in turns),
            longest_ms=max((t.longest_gap_ms for t in turns), default=0.0),
            audio_ms=sum(t.heard_ms for t in turns),
        )

    def as_dict(self) -> dict[str, object]:
        return {
            "turns": self.turns,
            "with_gap": self.with_gap,
            "gap_ms": round(self.gap_ms, 1),
            "longest_ms": round(self.longest_ms, 1),
            "heard_ms": round(self.audio_ms, 1),
        }


def _outcomes(results: Sequence[TurnResult | Knock]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for result in results:
        counts[result.outcome] = counts.get(result.outcome, 0) + 1
    return counts


# -- the knocks: raw HTTP and WebSocket on pre-built bytes ---------------------------------------


def _refusal(message: Any) -> bool:
    if not isinstance(message, dict):
        return False
    codes = (message.get(key) for key in ("code", "error", "error_code"))
    return any(isinstance(c, str) and c.startswith(tuple(REFUSALS)) for c in codes)


def _ws_frame(text: str) -> bytes:
    """A masked text frame (the zero mask: the payload goes as it is)."""
    data = text.encode()
    n = len(data)
    if n < 126:
        head = struct.pack("!BB", 0x81, 0x80 | n)
    elif n < 1 << 16:
        head = struct.pack("!BBH", 0x81, 0x80 | 126, n)
    else:
        head = struct.pack("!BBQ", 0x81, 0x80 | 127, n)
    return head + b"\0\0\0\0" + data


async def _read_frame(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    b0, b1 = await reader.readexactly(2)
    n = b1 & 0x7F
    if n == 126:
        (n,) = struct.unpack("!H", await reader.readexactly(2))
    elif n == 127:
        (n,) = struct.unpack("!Q", await reader.readexactly(8))
    return b0 & 0x0F, await reader.readexactly(n)


@dataclass(frozen=True)
class _Target:
    """What one protocol's knock sends: an HTTP request head (and body), or a WebSocket
    upgrade and the text frames that ask for a stream."""

    protocol: str
    head: bytes
    frames: bytes = b""
    websocket: bool = True


def _targets(url: str, voice: str | None) -> dict[str, _Target]:
    parts = urlsplit(url)
    host = parts.netloc
    key = base64.b64encode(b"voxflow-flood-ws").decode()

    def upgrade(path: str) -> bytes:
        return (
            f"GET {path} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
            "Sec-WebSocket-Version: 13\r\n\r\n"
        ).encode()

    speech = json.dumps(
        {"model": "voxflow", "input": _TEXT, "voice": voice or "alloy", "response_format": "pcm"}
    ).encode()
    start: dict[str, object] = {
        "type": "start",
        "context_id": "flood",
        "output_format": "pcm_24000",
    }
    if voice:
        start["voice"] = voice
    cartesia = {
        "model_id": "sonic-2",
        "context_id": "flood",
        "transcript": _TEXT,
        "continue": False,
        "voice": {"mode": "id", "id": voice or CARTESIA_VOICE},
        "output_format": {"container": "raw", "encoding": "pcm_s16le", "sample_rate": 24000},
    }
    eleven = urlencode({"output_format": "pcm_24000", "auto_mode": "false"})
    deepgram = urlencode(
        {"encoding": "linear16", "sample_rate": 24000, "model": voice or "aura-2-thalia-en"}
    )
    return {
        "openai": _Target(
            "openai",
            (
                f"POST /v1/audio/speech HTTP/1.1\r\nHost: {host}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(speech)}\r\n"
                "Connection: close\r\n\r\n"
            ).encode()
            + speech,
            websocket=False,
        ),
        "native": _Target(
            "native",
            upgrade("/v1/stream"),
            _ws_frame(json.dumps(start))
            + _ws_frame(json.dumps({"type": "flush", "context_id": _PROBE})),
        ),
        "elevenlabs": _Target(
            "elevenlabs",
            upgrade(f"/v1/text-to-speech/{voice or ELEVEN_VOICE}/multi-stream-input?{eleven}"),
            _ws_frame(json.dumps({"text": " ", "context_id": "flood"}))
            + _ws_frame(json.dumps({"text": _TEXT, "context_id": "flood", "flush": True})),
        ),
        "cartesia": _Target(
            "cartesia",
            upgrade("/tts/websocket?cartesia_version=2025-04-16"),
            _ws_frame(json.dumps(cartesia)),
        ),
        "deepgram": _Target("deepgram", upgrade(f"/v1/speak?{deepgram}")),
    }


async def knock(target: _Target, host: str, port: int, timeout_s: float) -> Knock:
    """Open one connection, ask for a stream, and say how the server answered."""
    started = time.monotonic()
    writer = None
    try:
        async with asyncio.timeout(timeout_s):
            reader, writer = await asyncio.open_connection(host, port)
            writer.write(target.head)
            status_line = await reader.readline()
            at = time.monotonic()
            fields = status_line.split()
            status = int(fields[1]) if len(fields) > 1 else 0
            if status == 429:
                return Knock(target.protocol, "refused", 1000.0 * (at - started))
            if not target.websocket or status != 101:
                return Knock(target.protocol, "admitted" if status == 200 else f"http {status}")
            while (await reader.readline()) not in (b"\r\n", b""):
                pass  # the rest of the 101's head
            writer.write(target.frames)
            return await _answer(target.protocol, reader, started)
    except TimeoutError:
        return Knock(target.protocol, "timeout")
    except (OSError, asyncio.IncompleteReadError, ValueError) as error:
        return Knock(target.protocol, f"failed: {type(error).__name__}")
    finally:
        if writer is not None:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()


async def _answer(protocol: str, reader: asyncio.StreamReader, started: float) -> Knock:
    """The first frame that says whether the stream was admitted."""
    while True:
        opcode, payload = await _read_frame(reader)
        at = time.monotonic()
        if opcode == 0x8:  # closed before any answer
            return Knock(protocol, "closed")
        if opcode == 0x2:
            return Knock(protocol, "admitted")  # audio
        if opcode != 0x1:
            continue  # a ping
        message = json.loads(payload)
        if _refusal(message):
            return Knock(protocol, "refused", 1000.0 * (at - started))
        if isinstance(message, dict) and message.get("type") == "Metadata":
            return Knock(protocol, "admitted")  # Deepgram: accepted at the handshake
        if isinstance(message, dict) and message.get("context_id") == _PROBE:
            return Knock(protocol, "admitted")  # native: the probe's answer came first
        if isinstance(message, dict) and (message.get("audio") or message.get("data")):
            return Knock(protocol, "admitted")
        if isinstance(message, dict) and ("error" in message or message.get("type") == "error"):
            return Knock(protocol, f"error: {message.get('error') or message.get('error_code')}")


async def flood(url: str, options: FloodOptions) -> list[Knock]:
    """``options.connections`` knocks at once, over the protocols in turn."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "ws") or parts.hostname is None:
        raise ValueError(f"bench-flood speaks plain HTTP: http://HOST:PORT, got {url!r}")
    port = parts.port or 80
    targets = _targets(url, options.voice)
    chosen = itertools.islice(itertools.cycle(options.protocols), options.connections)
    knocks = [knock(targets[p], parts.hostname, port, options.timeout_s) for p in chosen]
    return list(await asyncio.gather(*knocks))


class Knocker:
    """The flood's clients: a process of their own, with its own event loop, that knocks
    (``flood``) when asked. Close it when done."""

    _JOIN_S = 5.0

    def __init__(self) -> None:
        context = multiprocessing.get_context("spawn")
        self._connection, child = context.Pipe()
        self._process = context.Process(
            target=_knock_when_asked, args=(child,), name="flood-knocker", daemon=True
        )
        self._process.start()
        child.close()

    async def flood(self, url: str, options: FloodOptions) -> list[Knock]:
        """``flood(url, options)``, run in the knocker's process."""
        self._connection.send((url, options))
        answer: list[Knock] | BaseException = await asyncio.to_thread(self._connection.recv)
        if isinstance(answer, BaseException):
            raise answer
        return answer

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._connection.send(None)
        self._process.join(self._JOIN_S)
        if self._process.is_alive():
            self._process.kill()
            self._process.join()
        self._connection.close()
        self._process.close()


def _knock_when_asked(connection: Any) -> None:
    """The knocker's process: a flood for each ``(url, options)`` it is sent, until None."""
    with connection:
        while (request := connection.recv()) is not None:
            url, options = request
            try:
                answer: list[Knock] | BaseException = asyncio.run(flood(url, options))
            except Exception as error:  # the asking process raises it
                answer = error
            connection.send(answer)


# -- the rounds ----------------------------------------------------------------------------------


class _Announced:
    """A line that counts down ``latch`` once its turn's ``begin`` has returned (for a native
    line: the server has admitted or refused the turn)."""

    def __init__(self, line: Line, latch: _Latch) -> None:
        self._line = line
        self._latch = latch
        self.protocol = line.protocol

    async def begin(self, turn: str) -> tuple[float, asyncio.Queue[LineEvent]]:
        try:
            return await self._line.begin(turn)
        finally:
            self._latch.count_down()

    async def send(self, turn: str, text: str) -> float:
        return await self._line.send(turn, text)

    async def end(self, turn: str) -> float:
        return await self._line.end(turn)

    async def barge(self, turn: str, played_ms: float, ended: bool = False) -> float:
        return await self._line.barge(turn, played_ms, ended)

    async def close(self) -> None:
        await self._line.close()


class _Latch:
    def __init__(self, count: int) -> None:
        self._count = count
        self.done = asyncio.Event()
        if count <= 0:
            self.done.set()

    def count_down(self) -> None:
        self._count -= 1
        if self._count <= 0:
            self.done.set()


async def stream_limit(url: str) -> int:
    """The server's ``stream_limit`` from ``/readyz`` (0: it admits every stream)."""
    parts = urlsplit(url)
    if parts.hostname is None:
        raise ValueError(f"not a server URL: {url!r}")
    reader, writer = await asyncio.open_connection(parts.hostname, parts.port or 80)
    try:
        writer.write(
            f"GET /readyz HTTP/1.1\r\nHost: {parts.netloc}\r\nConnection: close\r\n\r\n".encode()
        )
        raw = await reader.read()
    finally:
        writer.close()
    body = raw.partition(b"\r\n\r\n")[2]
    return int(json.loads(body).get("stream_limit", 0))


async def run_flood(
    url: str,
    options: FloodOptions,
    replies: Sequence[Reply],
    progress: Callable[[str], None] = lambda _line: None,
) -> FloodReport:
    """Quiet and flood rounds in turn (see the module docstring)."""
    pattern = CallPattern(
        token_rate=options.token_rate,
        barge_in_share=1.0,
        barge_in_after_s=(options.heard_s, options.heard_s),
        llm_pause_share=0.0,
    )
    # Replies that outlast ``lead_s`` and the flood: a turn that ended before it would free its
    # stream, and the flood would find the server with room.
    long_enough = [r for r in replies if len(r.text) >= _LONG_REPLY_CHARS] or list(replies)
    scripts = [CallScript(i, pattern, long_enough) for i in range(options.admitted)]
    lines = [open_line(options.admitted_protocol, url, options.voice) for _ in scripts]
    knocks: list[Knock] = []
    quiet, flooded = _Turns(), _Turns()
    started = time.monotonic()
    turn_ids = itertools.count()
    knocker = Knocker()
    try:
        # An untimed round: the lines connect and the server warms up.
        await _round(url, lines, scripts, turn_ids, knocker, options, flood_now=False)
        for number in range(2 * options.rounds):
            with_flood = number % 2 == 1
            kind = "flood" if with_flood else "quiet"
            progress(f"round {number + 1} of {2 * options.rounds} ({kind})")
            speaking, opening, round_knocks = await _round(
                url, lines, scripts, turn_ids, knocker, options, with_flood
            )
            into = flooded if with_flood else quiet
            into.speaking.extend(speaking)
            into.opening.extend(opening)
            knocks.extend(round_knocks)
            await asyncio.sleep(options.settle_s)
    finally:
        await asyncio.gather(*(line.close() for line in lines), return_exceptions=True)
        await asyncio.to_thread(knocker.close)
    return FloodReport(
        url,
        options,
        tuple(knocks),
        tuple(quiet.opening),
        tuple(flooded.opening),
        time.monotonic() - started,
        os.getloadavg(),
        tuple(quiet.speaking),
        tuple(flooded.speaking),
    )


@dataclass
class _Turns:
    speaking: list[TurnResult] = field(default_factory=list)
    opening: list[TurnResult] = field(default_factory=list)


async def _round(
    url: str,
    lines: Sequence[Line],
    scripts: Sequence[CallScript],
    turn_ids: itertools.count[int],
    knocker: Knocker,
    options: FloodOptions,
    flood_now: bool,
) -> tuple[list[TurnResult], list[TurnResult], list[Knock]]:
    """One round: the first half of the calls open their turns and speak for ``lead_s``, then
    the others open theirs and, once all are admitted, the flood comes (or not)."""

    def turn(index: int, line: Line) -> Coroutine[Any, Any, TurnResult]:
        return run_turn(line, f"turn-{next(turn_ids)}", scripts[index].next_turn())

    half = len(lines) // 2
    speaking = [asyncio.create_task(turn(i, lines[i])) for i in range(half)]
    if speaking:
        await asyncio.sleep(options.lead_s)
    latch = _Latch(len(lines) - half)
    opening = [
        asyncio.create_task(turn(i, _Announced(lines[i], latch))) for i in range(half, len(lines))
    ]
    knocks: list[Knock] = []
    if flood_now:
        await latch.done.wait()
        knocks = await knocker.flood(url, options)
    return list(await asyncio.gather(*speaking)), list(await asyncio.gather(*opening)), knocks


# -- the report ----------------------------------------------------------------------------------


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def format_flood(report: FloodReport) -> str:
    o = report.options
    load = f", load average {report.load[0]:.2f}" if report.load else ""
    lines = [
        f"flood: {o.connections} connections at once past a full server ({o.admitted} "
        f"{o.admitted_protocol} calls speaking), {o.rounds} rounds, {report.wall_s:.0f} s{load}",
        "",
        "  refusals      knocks  refused  other  p50 ms  p95 ms  max ms  (connect to refusal)",
    ]
    for protocol in (*o.protocols, None):
        knocks = [k for k in report.knocks if protocol in (None, k.protocol)]
        refused = sum(k.outcome == "refused" for k in knocks)
        d = report.refusals(protocol)
        lines.append(
            f"  {protocol or 'all':<12}{len(knocks):>7}{refused:>9}{len(knocks) - refused:>7}"
            f"{_ms(d.p50):>8}{_ms(d.p95):>8}{_ms(d.max):>8}"
        )
    others = _outcomes([k for k in report.knocks if k.outcome != "refused"])
    if others:
        lines.append("  not refused: " + ", ".join(f"{n} {what}" for what, n in others.items()))
    quiet, flood_ = report.ttfa(False), report.ttfa(True)
    lines += ["", "  calls opened with it   turns  p50 ms  p95 ms  max ms  (time to first audio)"]
    for name, d in (("quiet rounds", quiet), ("flood rounds", flood_)):
        lines.append(f"  {name:<21}{d.count:>6}{_ms(d.p50):>8}{_ms(d.p95):>8}{_ms(d.max):>8}")
    r = ratio(flood_.p95, quiet.p95)
    if r is not None:
        lines.append(f"  flood p95 / quiet p95: {r:.2f}")
    if report.quiet_speaking or report.flood_speaking:
        lines += ["", "  calls speaking through it  turns  with a gap  gap ms  longest ms"]
        for name, g in (("quiet rounds", report.gaps(False)), ("flood rounds", report.gaps(True))):
            lines.append(
                f"  {name:<25}{g.turns:>6}{g.with_gap:>12}{g.gap_ms:>8.0f}{g.longest_ms:>12.0f}"
            )
    every = (*report.quiet_turns, *report.flood_turns, *report.quiet_speaking)
    bad = {
        outcome: n
        for outcome, n in _outcomes((*every, *report.flood_speaking)).items()
        if outcome not in ("ok", "barged")
    }
    if bad:
        lines.append("  admitted calls' turns not served: " + json.dumps(bad))
    return "\n".join(lines)
