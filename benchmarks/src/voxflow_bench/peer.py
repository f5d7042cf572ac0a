"""The same measurements against a Wyoming TTS server (wyoming-piper, or voxflow's own Wyoming
port), with the ``wyoming`` package's client, so that ``voxflow bench --peer`` sets the two side by
side in one run.

* *full text*: one ``synthesize`` event per reply on a fresh connection; first audio is the first
  ``audio-chunk`` that holds samples;
* *tokens*: ``synthesize-start``, one ``synthesize-chunk`` per LLM token at ``token_rate`` a
  second, ``synthesize-stop``, when the peer says it supports streaming (``describe``);
* *concurrency*: N connections, each sending one ``synthesize`` at the same moment.

Underruns use the same playout model as for voxflow (``voxflow.client.playout``), with each chunk's
duration from its sample rate, width and channels.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

from wyoming.audio import AudioChunk, AudioStop
from wyoming.client import AsyncTcpClient
from wyoming.event import Event
from wyoming.info import Describe, Info
from wyoming.tts import (
    Synthesize,
    SynthesizeChunk,
    SynthesizeStart,
    SynthesizeStop,
    SynthesizeStopped,
)

from voxflow import PlayoutBuffer, PlayoutStats, TextLanguage
from voxflow_bench.corpus import Reply
from voxflow_bench.options import BenchOptions
from voxflow_bench.progress import ProgressLine
from voxflow_bench.results import Level, Run, Section, first_sentence_chars
from voxflow_bench.sections import first_segment_token
from voxflow_bench.tokens import llm_tokens

__all__ = ["PeerInfo", "PeerRunner", "parse_peer_uri"]


def parse_peer_uri(uri: str) -> tuple[str, int]:
    """``tcp://HOST:PORT`` as (host, port)."""
    parts = urlsplit(uri)
    if parts.scheme != "tcp" or not parts.hostname or parts.port is None:
        raise ValueError(f"a Wyoming peer is tcp://HOST:PORT, got {uri!r}")
    return parts.hostname, parts.port


@dataclass(frozen=True)
class PeerInfo:
    """What the peer says about itself."""

    name: str
    streaming: bool  # supports synthesize-start/chunk/stop


class PeerRunner:
    """One bench run against a Wyoming server."""

    def __init__(self, uri: str, options: BenchOptions, progress: ProgressLine) -> None:
        self.uri = uri
        self.host, self.port = parse_peer_uri(uri)
        self.options = options
        self.progress = progress

    async def describe(self) -> PeerInfo:
        async with AsyncTcpClient(self.host, self.port) as client:
            await client.write_event(Describe().event())
            while True:
                event = await _read(client)
                if Info.is_type(event.type):
                    info = Info.from_event(event)
                    if not info.tts:
                        raise ValueError(f"the Wyoming peer at {self.uri} offers no TTS")
                    program = info.tts[0]
                    return PeerInfo(program.name, program.supports_synthesize_streaming)

    async def warm_up(self) -> None:
        await self._synthesize(Reply("warm-up", "warm-up", "Warming up."))

    async def full_text(self) -> Section:
        runs: list[Run] = []
        for _ in range(self.options.repeats):
            for reply in self.options.replies:
                runs.append(await self._synthesize(reply))
                self.progress.advance(f"peer full text: {reply.name}")
        return Section("full text", tuple(runs))

    async def tokens(self) -> Section:
        runs = []
        for reply in self.options.replies:
            runs.append(await self._stream(reply))
            self.progress.advance(f"peer tokens: {reply.name}")
        return Section(f"tokens at {self.options.token_rate:g}/s", tuple(runs))

    async def level(self, connections: int) -> Level:
        runs: list[Run] = []
        for round_ in range(self.options.rounds):
            replies = self.options.replies_for(connections, round_)
            async with asyncio.TaskGroup() as group:
                tasks = [group.create_task(self._synthesize(reply)) for reply in replies]
            runs.extend(task.result() for task in tasks)
            self.progress.advance(f"peer concurrency: {connections}")
        return Level(connections, Section(f"{connections} at once", tuple(runs)))

    # -- one request ---------------------------------------------------------------------------

    async def _synthesize(self, reply: Reply) -> Run:
        try:
            async with asyncio.timeout(self.options.run_timeout_s):
                async with AsyncTcpClient(self.host, self.port) as client:
                    sent = time.monotonic()
                    await client.write_event(Synthesize(text=reply.text).event())
                    heard = await self._listen(client, streaming=False)
        except (TimeoutError, OSError, ConnectionError):
            return _failed(reply, self.options.language)
        return heard.run(reply, sent, None, self.options.language)

    async def _stream(self, reply: Reply) -> Run:
        o = self.options
        tokens = llm_tokens(reply.text)
        ready = first_segment_token(tokens, language=o.language)
        sent: list[float] = []
        try:
            async with asyncio.timeout(o.run_timeout_s):
                async with AsyncTcpClient(self.host, self.port) as client:
                    await client.write_event(SynthesizeStart().event())
                    # Audio may come while tokens are still going out: listen meanwhile.
                    listener = asyncio.create_task(self._listen(client, streaming=True))
                    try:
                        begin = time.monotonic()
                        for i, token in enumerate(tokens):
                            delay = begin + i / o.token_rate - time.monotonic()
                            if delay > 0:
                                await asyncio.sleep(delay)
                            sent.append(time.monotonic())
                            await client.write_event(SynthesizeChunk(text=token).event())
                        await client.write_event(SynthesizeStop().event())
                        heard = await listener
                    finally:
                        listener.cancel()
                        with contextlib.suppress(asyncio.CancelledError):
                            await listener
        except (TimeoutError, OSError, ConnectionError):
            return _failed(reply, o.language)
        return heard.run(reply, sent[0], sent[ready], o.language)

    async def _listen(self, client: AsyncTcpClient, streaming: bool) -> _Heard:
        """Read the answer to one request, noting each chunk's arrival."""
        playout = PlayoutBuffer(self.options.playout_buffer_ms)
        first: float | None = None
        while True:
            event = await _read(client)
            arrived = time.monotonic()
            if AudioChunk.is_type(event.type):
                chunk = AudioChunk.from_event(event)
                frames = len(chunk.audio) // (chunk.width * chunk.channels)
                if frames and first is None:
                    first = arrived
                playout.add(arrived, 1000.0 * frames / chunk.rate)
            elif (streaming and SynthesizeStopped.is_type(event.type)) or (
                not streaming and AudioStop.is_type(event.type)
            ):
                playout.mark_end(arrived)
                return _Heard(first, playout.stats(), ok=first is not None)
            elif event.type == "error":
                return _Heard(first, playout.stats(), ok=False)


@dataclass(frozen=True)
class _Heard:
    """One answer as the client heard it."""

    first: float | None  # arrival of the first chunk with samples
    playout: PlayoutStats
    ok: bool

    def run(self, reply: Reply, sent: float, ready_at: float | None, language: TextLanguage) -> Run:
        first = self.first
        return Run(
            reply=reply.name,
            first_sentence_chars=first_sentence_chars(reply.text, language),
            ok=self.ok,
            ttfa_ms=None if first is None else 1000.0 * (first - sent),
            ready_ms=None if first is None or ready_at is None else 1000.0 * (first - ready_at),
            server_ttfa_ms=None,
            underruns=self.playout.underruns,
            underrun_ms=self.playout.underrun_ms,
            deadline_misses=None,
            audio_ms=self.playout.received_ms,
        )


async def _read(client: AsyncTcpClient) -> Event:
    event = await client.read_event()
    if event is None:
        raise ConnectionError("the Wyoming peer closed the connection")
    return event


def _failed(reply: Reply, language: TextLanguage) -> Run:
    chars = first_sentence_chars(reply.text, language)
    return Run(reply.name, chars, False, None, None, None, 0, 0.0, None, 0.0)
