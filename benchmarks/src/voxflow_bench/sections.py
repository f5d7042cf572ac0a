"""The measurements ``voxflow bench`` runs against a voxflow server (native WebSocket protocol).

Everything is measured on the client's clock (``time.monotonic()``), from the moment a message is
handed to the socket to the moment the reader task receives the answer, so the numbers include the
network, the server's queues and the client's own parsing: what a voice agent would experience.

* *full text*: each corpus reply sent at once on a fresh context (start + text + end);
* *tokens*: each reply sent as LLM tokens (``voxflow_bench.tokens``) at ``token_rate`` a second,
  on an absolute schedule; first audio is measured from the first token, and from the token
  after which the first segment was certain (the server could not have started earlier);
* *cancel*: barge-in once ``cancel_after_ms`` of audio has arrived;
* *concurrency*: N connections open first, then in each round all of them start a different
  reply at the same moment.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections.abc import Sequence

from voxflow import (
    AudioEvent,
    ChunkingConfig,
    ContextRecorder,
    ContextResult,
    ErrorEvent,
    TextBuffer,
    TextLanguage,
    VoxflowClient,
    speak,
)
from voxflow_bench.corpus import Reply
from voxflow_bench.options import BenchOptions
from voxflow_bench.progress import ProgressLine
from voxflow_bench.results import CancelResult, Level, Run, Section, first_sentence_chars
from voxflow_bench.stats import Distribution
from voxflow_bench.tokens import llm_tokens

__all__ = ["VoxflowRunner", "first_segment_token"]


def first_segment_token(
    tokens: Sequence[str],
    chunking: ChunkingConfig | None = None,
    language: TextLanguage = TextLanguage.ENGLISH,
) -> int:
    """Index of the token after which the server's first segment of the text is certain (its
    segmenter emits it on that token, with ``language``'s rules), or of the last token when
    only the end of input does."""
    buffer = TextBuffer(chunking or ChunkingConfig(), language=language)
    for index, token in enumerate(tokens):
        if buffer.feed(token, now=0.0):
            return index
    return len(tokens) - 1


def to_run(
    reply: Reply,
    result: ContextResult | None,
    ready_at: float | None = None,
    language: TextLanguage = TextLanguage.ENGLISH,
) -> Run:
    """The record of one context: ``ready_at`` is when the first segment became certain."""
    chars = first_sentence_chars(reply.text, language)
    if result is None:
        return Run(reply.name, chars, False, None, None, None, 0, 0.0, None, 0.0)
    ok = result.done is not None and not result.errors
    metrics = result.done.metrics if result.done is not None else None
    first = result.first_audio_at
    return Run(
        reply=reply.name,
        first_sentence_chars=chars,
        ok=ok and first is not None,
        ttfa_ms=result.ttfa_ms,
        ready_ms=None if ready_at is None or first is None else 1000.0 * (first - ready_at),
        server_ttfa_ms=None if metrics is None else metrics.ttfa_ms,
        underruns=result.playout.underruns,
        underrun_ms=result.playout.underrun_ms,
        deadline_misses=None if metrics is None else metrics.deadline_misses,
        audio_ms=result.playout.received_ms,
    )


class VoxflowRunner:
    """One bench run against a voxflow server: options, progress and unique context ids."""

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

    # -- full text ---------------------------------------------------------------------------

    async def full_text(self, client: VoxflowClient) -> Section:
        runs: list[Run] = []
        for _ in range(self.options.repeats):
            for reply in self.options.replies:
                runs.append(
                    to_run(
                        reply,
                        await self.speak(client, "full", reply.text),
                        None,
                        self.options.language,
                    )
                )
                self.progress.advance(f"full text: {reply.name}")
        return Section("full text", tuple(runs))

    # -- tokens ------------------------------------------------------------------------------

    async def tokens(self, client: VoxflowClient) -> Section:
        runs: list[Run] = []
        for reply in self.options.replies:
            try:
                async with asyncio.timeout(self.options.run_timeout_s):
                    runs.append(await self._stream_tokens(client, reply))
            except TimeoutError:
                runs.append(to_run(reply, None, None, self.options.language))
            self.progress.advance(f"tokens: {reply.name}")
        return Section(f"tokens at {self.options.token_rate:g}/s", tuple(runs))

    async def _stream_tokens(self, client: VoxflowClient, reply: Reply) -> Run:
        o = self.options
        tokens = llm_tokens(reply.text)
        ready = first_segment_token(tokens, language=o.language)
        context_id = self.context_id("tokens")
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
        result = await recorder.collect(client, stop_on_error=True)
        return to_run(reply, result, sent[ready], o.language)

    # -- cancel ------------------------------------------------------------------------------

    async def cancel(self, client: VoxflowClient) -> CancelResult:
        o = self.options
        errors = missed = in_flight = after = 0
        played: list[float] = []
        client_latency: list[float] = []
        server_latency: list[float] = []
        for _ in range(o.cancel_repeats):
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
            runs=o.cancel_repeats,
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
        recorder.text_sent(await client.send_text(context_id, o.cancel_text))
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

    # -- concurrency -------------------------------------------------------------------------

    async def level(self, connections: int, label: str = "concurrency") -> Level:
        o = self.options
        runs: list[Run] = []
        async with contextlib.AsyncExitStack() as stack:
            # All connections are open before the first text goes out, so the handshakes do not
            # stagger the start of the contexts.
            clients = [
                await stack.enter_async_context(VoxflowClient.connect(self.url))
                for _ in range(connections)
            ]
            for round_ in range(o.rounds):
                replies = o.replies_for(connections, round_)
                async with asyncio.TaskGroup() as group:
                    tasks = [
                        group.create_task(self.speak(c, f"conc{connections}", reply.text))
                        for c, reply in zip(clients, replies, strict=True)
                    ]
                for reply, task in zip(replies, tasks, strict=True):
                    runs.append(to_run(reply, task.result(), None, self.options.language))
                self.progress.advance(f"{label}: {connections}")
        return Level(connections, Section(f"{connections} at once", tuple(runs)))
