"""``voxflow bench``: latency, barge-in and load figures of a running server, seen by a client.

Everything is measured on the client's clock (``time.monotonic()``), from the moment a message is
handed to the socket to the moment the reader task receives the answer, so the numbers include the
network, the server's queues and the client's own parsing: what a voice agent would experience.
The server's own figures (``done.metrics``, ``cancelled.latency_ms``) are reported next to them.

Sections:

1. *Full text*: each text sent at once on a fresh context (start + text + end), ``repeats`` times.
2. *Streamed tokens*: the long sentence sent word by word at an LLM's token rate.
3. *Cancel*: barge-in once ``cancel_after_ms`` of audio has arrived.
4. *Concurrency*: N connections speaking a long text at the same moment, for each N.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import dataclasses
import itertools
import math
import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TextIO

from voxflow.bench.engine import LONG_SENTENCE as LONG
from voxflow.bench.engine import SHORT
from voxflow.bench.progress import ProgressLine
from voxflow.client.client import (
    AudioEvent,
    ContextRecorder,
    ContextResult,
    ErrorEvent,
    VoxflowClient,
    speak,
    stream_url,
)

LONG_TEXT = (
    "Thanks for waiting while I checked your order in our system. The package left our "
    "warehouse on Monday morning and is now with the regional courier, who expects to deliver "
    "it on Thursday between nine and noon. You will get a text message about an hour before the "
    "driver arrives, with a link to follow the van on a map. If nobody is home, the driver will "
    "leave a card and try again the next day, or you can pick the parcel up from the post office "
    "on Elm Street after four. Would you like me to change the delivery address, or is there "
    "anything else I can do for you today?"
)

# A token as an LLM streams it: a word with the whitespace that follows it. The leading \s*
# only matters for the first token of a text that starts with whitespace; it keeps every
# character in exactly one token, which maps timestamps' char offsets back to tokens.
_TOKEN = re.compile(r"\s*\S+\s*")


@dataclass(frozen=True)
class BenchOptions:
    repeats: int = 20
    texts: tuple[tuple[str, str], ...] = (("short", SHORT), ("long", LONG))
    streamed_text: str = LONG
    token_rate: float = 40.0  # tokens per second
    concurrency: tuple[int, ...] = (1, 2, 4, 8)
    # Rounds per concurrency level. A ~600-character text is ~30 s of audio and the server
    # renders at most 20 s ahead of playback, so a round lasts ~10 s whatever N is: two rounds
    # of four levels keep the default bench within about three minutes.
    concurrency_rounds: int = 2
    long_text: str = LONG_TEXT  # cancel and concurrency sections
    playout_buffer_ms: float = 150.0
    output_format: str = "pcm_24000"
    voice: str | None = None  # None: the server's default voice
    seed: int | None = 1  # seeded synthesis: every run renders the same audio
    cancel_after_ms: float = 300.0  # barge in once this much audio has arrived
    cancel_grace_ms: float = 250.0  # how long to watch for audio after `cancelled`
    run_timeout_s: float = 60.0  # a context that takes longer counts as an error
    warmup: bool = True  # one untimed context first, so model warm-up is not measured

    def __post_init__(self) -> None:
        if self.repeats < 1:
            raise ValueError("repeats must be >= 1")
        if not self.texts or any(not text.strip() for _, text in self.texts):
            raise ValueError("texts must be non-empty")
        if not self.streamed_text.strip() or not self.long_text.strip():
            raise ValueError("streamed_text and long_text must be non-empty")
        if self.token_rate <= 0:
            raise ValueError("token_rate must be > 0")
        if any(n < 1 for n in self.concurrency):
            raise ValueError("concurrency levels must be >= 1")
        if self.concurrency_rounds < 1:
            raise ValueError("concurrency_rounds must be >= 1")
        if self.playout_buffer_ms < 0 or self.cancel_after_ms < 0 or self.cancel_grace_ms < 0:
            raise ValueError("playout_buffer_ms, cancel_after_ms and cancel_grace_ms must be >= 0")
        if self.run_timeout_s <= 0:
            raise ValueError("run_timeout_s must be > 0")

    @property
    def steps(self) -> int:
        """Progress steps: one per timed run (a concurrency round counts as one)."""
        return (
            len(self.texts) * self.repeats
            + 2 * self.repeats
            + len(self.concurrency) * self.concurrency_rounds
        )

    def as_dict(self) -> dict[str, object]:
        return dataclasses.asdict(self)


# -- statistics ----------------------------------------------------------------------------------


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100), interpolated linearly between order statistics."""
    if not values:
        raise ValueError("percentile of no values")
    if not 0 <= q <= 100:
        raise ValueError(f"q must be in [0, 100], got {q}")
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100.0
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


@dataclass(frozen=True)
class Distribution:
    count: int
    p50: float | None
    p95: float | None
    p99: float | None
    mean: float | None
    max: float | None

    @classmethod
    def of(cls, values: Iterable[float]) -> Distribution:
        data = list(values)
        if not data:
            return cls(0, None, None, None, None, None)
        return cls(
            count=len(data),
            p50=percentile(data, 50),
            p95=percentile(data, 95),
            p99=percentile(data, 99),
            mean=sum(data) / len(data),
            max=max(data),
        )

    def as_dict(self) -> dict[str, object]:
        def r(v: float | None) -> float | None:
            return None if v is None else round(v, 3)

        return {
            "count": self.count,
            "p50": r(self.p50),
            "p95": r(self.p95),
            "p99": r(self.p99),
            "mean": r(self.mean),
            "max": r(self.max),
        }


# -- report --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FullTextResult:
    name: str
    chars: int
    runs: int
    errors: int  # runs with an error event, no `done`, or a timeout
    client_ttfa_ms: Distribution  # first audio arrival - text send
    server_ttfa_ms: Distribution  # done.metrics.ttfa_ms
    rtf: Distribution  # done.metrics.rtf
    chunk_gap_ms: Distribution  # between audio arrivals within a context, all runs pooled
    audio_ms: Distribution

    def as_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "chars": self.chars,
            "runs": self.runs,
            "errors": self.errors,
            "client_ttfa_ms": self.client_ttfa_ms.as_dict(),
            "server_ttfa_ms": self.server_ttfa_ms.as_dict(),
            "rtf": self.rtf.as_dict(),
            "chunk_gap_ms": self.chunk_gap_ms.as_dict(),
            "audio_ms": self.audio_ms.as_dict(),
        }


@dataclass(frozen=True)
class StreamedResult:
    chars: int
    tokens: int
    token_rate: float
    runs: int
    errors: int
    first_segment_chars: Distribution  # where the first segment ended (its last word's char_end)
    after_segment_ms: Distribution  # first audio - send of the token completing segment 1
    after_first_token_ms: Distribution  # first audio - send of the first token
    underruns: int  # playout underruns, all runs
    underrun_ms: float

    def as_dict(self) -> dict[str, object]:
        return {
            "chars": self.chars,
            "tokens": self.tokens,
            "token_rate": self.token_rate,
            "runs": self.runs,
            "errors": self.errors,
            "first_segment_chars": self.first_segment_chars.as_dict(),
            "after_segment_ms": self.after_segment_ms.as_dict(),
            "after_first_token_ms": self.after_first_token_ms.as_dict(),
            "underruns": self.underruns,
            "underrun_ms": round(self.underrun_ms, 3),
        }


@dataclass(frozen=True)
class CancelResult:
    runs: int
    errors: int
    missed: int  # runs whose `done` came before the cancel could take effect
    played_ms: Distribution  # what the client reported as played when it barged in
    client_latency_ms: Distribution  # cancelled arrival - cancel send
    server_latency_ms: Distribution  # cancelled.latency_ms
    audio_in_flight: int  # audio frames that arrived between cancel send and `cancelled`
    audio_after_cancelled: int  # must be 0: audio frames that arrived after `cancelled`

    def as_dict(self) -> dict[str, object]:
        return {
            "runs": self.runs,
            "errors": self.errors,
            "missed": self.missed,
            "played_ms": self.played_ms.as_dict(),
            "client_latency_ms": self.client_latency_ms.as_dict(),
            "server_latency_ms": self.server_latency_ms.as_dict(),
            "audio_in_flight": self.audio_in_flight,
            "audio_after_cancelled": self.audio_after_cancelled,
        }


@dataclass(frozen=True)
class ConcurrencyResult:
    connections: int
    contexts: int
    errors: int
    ttfa_ms: Distribution  # client side
    server_ttfa_ms: Distribution
    rtf: Distribution
    underruns: int  # playout underruns, all contexts of the level
    underrun_ms: float
    max_deadline_misses: int

    def as_dict(self) -> dict[str, object]:
        return {
            "connections": self.connections,
            "contexts": self.contexts,
            "errors": self.errors,
            "ttfa_ms": self.ttfa_ms.as_dict(),
            "server_ttfa_ms": self.server_ttfa_ms.as_dict(),
            "rtf": self.rtf.as_dict(),
            "underruns": self.underruns,
            "underrun_ms": round(self.underrun_ms, 3),
            "max_deadline_misses": self.max_deadline_misses,
        }


@dataclass(frozen=True)
class BenchReport:
    url: str
    options: BenchOptions
    full_text: tuple[FullTextResult, ...]
    streamed: StreamedResult
    cancel: CancelResult
    concurrency: tuple[ConcurrencyResult, ...]
    wall_s: float

    def as_dict(self) -> dict[str, object]:
        return {
            "url": self.url,
            "options": self.options.as_dict(),
            "full_text": [r.as_dict() for r in self.full_text],
            "streamed": self.streamed.as_dict(),
            "cancel": self.cancel.as_dict(),
            "concurrency": [r.as_dict() for r in self.concurrency],
            "wall_s": round(self.wall_s, 2),
        }


# -- helpers -------------------------------------------------------------------------------------


def tokenize(text: str) -> list[str]:
    """``text`` as LLM-style tokens (a word and the whitespace after it).

    Their concatenation is ``text`` itself, unless ``text`` is all whitespace (no tokens then).
    """
    return _TOKEN.findall(text)


def token_for_char(tokens: Sequence[str], char: int) -> int:
    """Index of the token that carries character ``char`` of ``"".join(tokens)``."""
    ends = list(itertools.accumulate(len(t) for t in tokens))
    if not 0 <= char < (ends[-1] if ends else 0):
        raise ValueError(f"character {char} is outside the {ends[-1] if ends else 0} sent")
    return bisect.bisect_right(ends, char)


def _ok(result: ContextResult | None) -> bool:
    return result is not None and result.done is not None and not result.errors


def _server_ttfas(results: Iterable[ContextResult]) -> list[float]:
    return [r.metrics.ttfa_ms for r in results if r.metrics and r.metrics.ttfa_ms is not None]


def _rtfs(results: Iterable[ContextResult]) -> list[float]:
    return [r.metrics.rtf for r in results if r.metrics and r.metrics.rtf is not None]


def _client_ttfas(results: Iterable[ContextResult]) -> list[float]:
    return [r.ttfa_ms for r in results if r.ttfa_ms is not None]


class _Runner:
    """Shared state of one bench run: options, progress and unique context ids."""

    def __init__(self, url: str, options: BenchOptions, progress: ProgressLine) -> None:
        self.url = url
        self.options = options
        self.progress = progress
        self._ids = itertools.count()

    def context_id(self, section: str) -> str:
        return f"bench-{section}-{next(self._ids)}"

    async def speak(self, client: VoxflowClient, section: str, text: str) -> ContextResult | None:
        """One context, start + text + end; None when it timed out."""
        o = self.options
        try:
            async with asyncio.timeout(o.run_timeout_s):
                return await speak(
                    client,
                    self.context_id(section),
                    text,
                    voice=o.voice,
                    output_format=o.output_format,
                    seed=o.seed,
                    playout_buffer_ms=o.playout_buffer_ms,
                )
        except TimeoutError:
            return None

    # -- 1. full text ------------------------------------------------------------------------

    async def full_text(self, client: VoxflowClient, name: str, text: str) -> FullTextResult:
        results: list[ContextResult | None] = []
        for _ in range(self.options.repeats):
            results.append(await self.speak(client, f"full-{name}", text))
            self.progress.advance(f"full text: {name}")
        good = [r for r in results if r is not None and _ok(r)]
        return FullTextResult(
            name=name,
            chars=len(text),
            runs=len(results),
            errors=len(results) - len(good),
            client_ttfa_ms=Distribution.of(_client_ttfas(good)),
            server_ttfa_ms=Distribution.of(_server_ttfas(good)),
            rtf=Distribution.of(_rtfs(good)),
            chunk_gap_ms=Distribution.of(g for r in good for g in r.chunk_gaps_ms),
            audio_ms=Distribution.of(r.audio_ms for r in good),
        )

    # -- 2. streamed tokens ------------------------------------------------------------------

    async def streamed(self, client: VoxflowClient) -> StreamedResult:
        o = self.options
        tokens = tokenize(o.streamed_text)
        ok = errors = underruns = 0
        underrun_ms = 0.0
        segment_chars: list[float] = []
        after_segment: list[float] = []
        after_first: list[float] = []
        for _ in range(o.repeats):
            try:
                async with asyncio.timeout(o.run_timeout_s):
                    result, sent = await self._stream_tokens(client, tokens)
            except TimeoutError:
                result, sent = None, []
            self.progress.advance("streamed tokens")
            if result is None or not _ok(result) or result.first_audio_at is None:
                errors += 1
                continue
            ok += 1
            underruns += result.playout.underruns
            underrun_ms += result.playout.underrun_ms
            after_first.append(1000.0 * (result.first_audio_at - sent[0]))
            first_words = result.timestamps[0].words if result.timestamps else ()
            if first_words:
                # The client cannot see where the server cut the text; the first timestamps
                # event says it: the first segment ends with that event's last word.
                end = first_words[-1].char_end
                segment_chars.append(float(end))
                token = token_for_char(tokens, max(0, end - 1))
                after_segment.append(1000.0 * (result.first_audio_at - sent[token]))
        return StreamedResult(
            chars=len(o.streamed_text),
            tokens=len(tokens),
            token_rate=o.token_rate,
            runs=ok + errors,
            errors=errors,
            first_segment_chars=Distribution.of(segment_chars),
            after_segment_ms=Distribution.of(after_segment),
            after_first_token_ms=Distribution.of(after_first),
            underruns=underruns,
            underrun_ms=underrun_ms,
        )

    async def _stream_tokens(
        self, client: VoxflowClient, tokens: Sequence[str]
    ) -> tuple[ContextResult, list[float]]:
        o = self.options
        context_id = self.context_id("streamed")
        recorder = ContextRecorder(context_id, o.playout_buffer_ms)
        await client.start(context_id, voice=o.voice, output_format=o.output_format, seed=o.seed)
        sent: list[float] = []
        begin = time.monotonic()
        for i, token in enumerate(tokens):
            # Absolute send times: a late wake-up does not push every later token back.
            delay = begin + i / o.token_rate - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            sent.append(await client.send_text(context_id, token))
            recorder.text_sent(sent[-1])
        await client.end(context_id)
        # The reader task stamped every event on arrival meanwhile; reading them now is enough.
        return await recorder.collect(client, stop_on_error=True), sent

    # -- 3. cancel ---------------------------------------------------------------------------

    async def cancel(self, client: VoxflowClient) -> CancelResult:
        o = self.options
        errors = missed = in_flight = after = 0
        played: list[float] = []
        client_latency: list[float] = []
        server_latency: list[float] = []
        for _ in range(o.repeats):
            context_id = self.context_id("cancel")
            try:
                async with asyncio.timeout(o.run_timeout_s):
                    outcome = await self._barge_in(client, context_id)
            except TimeoutError:
                outcome = None
            self.progress.advance("cancel")
            if outcome is None:
                errors += 1
                continue
            result, cancel_at, played_ms, frames_in_flight = outcome
            if result.errors or cancel_at is None:
                errors += 1
            elif result.cancelled is None:
                missed += 1
            else:
                played.append(played_ms)
                client_latency.append(1000.0 * (result.cancelled.received_at - cancel_at))
                server_latency.append(result.cancelled.latency_ms)
                in_flight += frames_in_flight
            # Watch the context for a while after the run: any audio now is audio that came
            # after `cancelled` (or, for a missed run, the error about cancelling too late).
            await asyncio.sleep(o.cancel_grace_ms / 1000.0)
            late = client.pending(context_id)
            if result.cancelled is not None:
                after += sum(isinstance(e, AudioEvent) for e in late)
        return CancelResult(
            runs=o.repeats,
            errors=errors,
            missed=missed,
            played_ms=Distribution.of(played),
            client_latency_ms=Distribution.of(client_latency),
            server_latency_ms=Distribution.of(server_latency),
            audio_in_flight=in_flight,
            audio_after_cancelled=after,
        )

    async def _barge_in(
        self, client: VoxflowClient, context_id: str
    ) -> tuple[ContextResult, float | None, float, int]:
        o = self.options
        recorder = ContextRecorder(context_id, o.playout_buffer_ms)
        await client.start(context_id, voice=o.voice, output_format=o.output_format, seed=o.seed)
        recorder.text_sent(await client.send_text(context_id, o.long_text))
        await client.end(context_id)
        cancel_at: float | None = None
        played_ms = 0.0
        in_flight = 0
        async for event in client.events(context_id):
            recorder.observe(event)
            if isinstance(event, ErrorEvent):
                break
            if not isinstance(event, AudioEvent):
                continue
            if cancel_at is not None:
                in_flight += 1
            elif recorder.audio_ms >= o.cancel_after_ms:
                # What the listener has heard right now, as a real client would report it.
                played_ms = recorder.playout.played_ms(time.monotonic())
                cancel_at = await client.cancel(context_id, played_ms)
        return recorder.result(), cancel_at, played_ms, in_flight

    # -- 4. concurrency ----------------------------------------------------------------------

    async def concurrency(self, connections: int) -> ConcurrencyResult:
        o = self.options
        results: list[ContextResult | None] = []
        async with contextlib.AsyncExitStack() as stack:
            # All connections are open before the first text goes out, so the handshakes do not
            # stagger the start of the contexts.
            clients = [
                await stack.enter_async_context(VoxflowClient.connect(self.url))
                for _ in range(connections)
            ]
            for _ in range(o.concurrency_rounds):
                async with asyncio.TaskGroup() as group:
                    tasks = [
                        group.create_task(self.speak(c, f"conc{connections}", o.long_text))
                        for c in clients
                    ]
                results.extend(t.result() for t in tasks)
                self.progress.advance(f"concurrency: {connections}")
        good = [r for r in results if r is not None and _ok(r)]
        return ConcurrencyResult(
            connections=connections,
            contexts=len(results),
            errors=len(results) - len(good),
            ttfa_ms=Distribution.of(_client_ttfas(good)),
            server_ttfa_ms=Distribution.of(_server_ttfas(good)),
            rtf=Distribution.of(_rtfs(good)),
            underruns=sum(r.playout.underruns for r in good),
            underrun_ms=sum(r.playout.underrun_ms for r in good),
            max_deadline_misses=max(
                (r.metrics.deadline_misses for r in good if r.metrics), default=0
            ),
        )


async def run_server_bench(
    url: str, options: BenchOptions | None = None, out: TextIO | None = None
) -> BenchReport:
    """Run every section against the server at ``url`` (``http://host:port`` or a ws URL).

    Progress goes to ``out`` as one line redrawn in place; the report is returned, not printed.
    Raises ``VoxflowConnectionError`` if the server cannot be reached or a connection drops.
    """
    options = options or BenchOptions()
    ws_url = stream_url(url)
    progress = ProgressLine(out, options.steps)
    runner = _Runner(ws_url, options, progress)
    started = time.monotonic()
    try:
        async with VoxflowClient.connect(ws_url) as client:
            if options.warmup:
                progress.show("warming up")
                await runner.speak(client, "warmup", SHORT)
            full_text = tuple(
                [await runner.full_text(client, name, text) for name, text in options.texts]
            )
            streamed = await runner.streamed(client)
            cancel = await runner.cancel(client)
        concurrency = tuple([await runner.concurrency(n) for n in options.concurrency])
    finally:
        progress.finish()
    return BenchReport(
        url=ws_url,
        options=options,
        full_text=full_text,
        streamed=streamed,
        cancel=cancel,
        concurrency=concurrency,
        wall_s=time.monotonic() - started,
    )


def run_server_bench_sync(
    url: str, options: BenchOptions | None = None, out: TextIO | None = None
) -> BenchReport:
    """``run_server_bench`` on a fresh event loop, for the CLI."""
    return asyncio.run(run_server_bench(url, options, out))


# -- formatting ----------------------------------------------------------------------------------


def _ms(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    # The first column is a label: left-aligned; the rest are numbers: right-aligned.
    lines = []
    for row in [header, *rows]:
        cells = [
            row[0].ljust(widths[0]),
            *(c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True)),
        ]
        lines.append("  " + "  ".join(cells).rstrip())
    return lines


def _triple(d: Distribution) -> list[str]:
    return [_ms(d.p50), _ms(d.p95), _ms(d.p99)]


def format_report(report: BenchReport) -> str:
    """The report as plain-text tables, one section per measurement."""
    o = report.options
    lines = [
        f"voxflow server bench: {report.url}",
        f"format {o.output_format}, voice {o.voice or 'default'}, playout buffer "
        f"{o.playout_buffer_ms:g} ms, {o.repeats} runs per case, wall {report.wall_s:.1f} s",
        "",
        "1. TTFA, full text (start + text + end on a fresh context; ms)",
    ]
    lines += _table(
        [
            "text",
            "chars",
            "runs",
            "err",
            "TTFA p50",
            "p95",
            "p99",
            "server p50",
            "p95",
            "p99",
            "RTF p50",
            "gap p50",
            "gap p95",
        ],
        [
            [
                r.name,
                str(r.chars),
                str(r.runs),
                str(r.errors),
                *_triple(r.client_ttfa_ms),
                *_triple(r.server_ttfa_ms),
                _ms(r.rtf.p50, 4),
                _ms(r.chunk_gap_ms.p50),
                _ms(r.chunk_gap_ms.p95),
            ]
            for r in report.full_text
        ],
    )
    s = report.streamed
    lines += [
        "",
        f"2. Streamed tokens ({s.tokens} tokens, {s.chars} chars at {s.token_rate:g} tokens/s; ms)",
        "   after segment = first audio - send of the token that completes the first segment",
    ]
    lines += _table(
        [
            "",
            "runs",
            "err",
            "seg chars",
            "after segment p50",
            "p95",
            "after 1st token p50",
            "p95",
            "underruns",
        ],
        [
            [
                "streamed",
                str(s.runs),
                str(s.errors),
                _ms(s.first_segment_chars.p50, 0),
                _ms(s.after_segment_ms.p50),
                _ms(s.after_segment_ms.p95),
                _ms(s.after_first_token_ms.p50),
                _ms(s.after_first_token_ms.p95),
                str(s.underruns),
            ]
        ],
    )
    c = report.cancel
    lines += [
        "",
        f"3. Cancel (barge-in after {o.cancel_after_ms:g} ms of audio arrived; ms)",
    ]
    lines += _table(
        [
            "",
            "runs",
            "err",
            "missed",
            "played p50",
            "latency p50",
            "p95",
            "server p50",
            "p95",
            "in flight",
            "after cancelled",
        ],
        [
            [
                "cancel",
                str(c.runs),
                str(c.errors),
                str(c.missed),
                _ms(c.played_ms.p50),
                _ms(c.client_latency_ms.p50),
                _ms(c.client_latency_ms.p95),
                _ms(c.server_latency_ms.p50, 2),
                _ms(c.server_latency_ms.p95, 2),
                str(c.audio_in_flight),
                str(c.audio_after_cancelled),
            ]
        ],
    )
    lines += [
        "",
        f"4. Concurrency (N connections at once, {len(o.long_text)}-char text, "
        f"{o.concurrency_rounds} rounds; ms)",
    ]
    lines += _table(
        [
            "N",
            "contexts",
            "err",
            "TTFA p50",
            "p95",
            "p99",
            "server p50",
            "RTF p50",
            "underruns",
            "underrun ms",
            "max misses",
        ],
        [
            [
                str(r.connections),
                str(r.contexts),
                str(r.errors),
                *_triple(r.ttfa_ms),
                _ms(r.server_ttfa_ms.p50),
                _ms(r.rtf.p50, 4),
                str(r.underruns),
                _ms(r.underrun_ms),
                str(r.max_deadline_misses),
            ]
            for r in report.concurrency
        ],
    )
    return "\n".join(lines)
