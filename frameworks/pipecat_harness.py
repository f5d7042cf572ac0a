"""Pipecat as an agent runs it: a Pipeline [source, tts, sink] in a PipelineWorker.

The source plays the LLM and the user-turn processor: it queues LLMFullResponseStartFrame,
LLMTextFrame tokens at LLM speed and LLMFullResponseEndFrame, and barges in with
`broadcast_interruption()` (an InterruptionFrame downstream, as Pipecat 1.14's user-turn
processor does). The sink collects what the TTS service pushes: TTSAudioRawFrame,
TTSTextFrame (word timestamps, `pts` in clock nanoseconds) and the reply's end.
(PipelineTask/PipelineRunner are deprecated aliases of PipelineWorker/WorkerRunner in 1.14.)
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import voxflow_checks as checks
from pipecat.frames.frames import (
    EndFrame,
    ErrorFrame,
    Frame,
    InterruptionFrame,
    LLMFullResponseEndFrame,
    LLMFullResponseStartFrame,
    LLMTextFrame,
    TTSAudioRawFrame,
    TTSStoppedFrame,
    TTSTextFrame,
)
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.worker import PipelineParams, PipelineWorker
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor
from pipecat.services.tts_service import TTSService
from pipecat.workers.runner import WorkerRunner

SAMPLE_RATE = 24000


@dataclass
class Turn:
    text: str
    audio: list[bytes] = field(default_factory=list)
    words: list[tuple[str, float]] = field(default_factory=list)
    first_sentence_sent_at: float | None = None
    all_sent_at: float | None = None
    first_audio_at: float | None = None
    audio_after_interruption: int = 0
    interrupted_at: float | None = None
    # The interruption reached the end of the pipeline: Pipecat drops the audio frames queued
    # before it, so audio after it was made after the TTS service handled the barge-in. (Audio
    # already on its way when the user spoke reaches the sink before it, and is not late.)
    interruption_passed: bool = False
    ended: asyncio.Event = field(default_factory=asyncio.Event)
    stopped: asyncio.Event = field(default_factory=asyncio.Event)
    # When each audio frame and the LLMFullResponseEndFrame reached the sink (time.monotonic()).
    audio_at: list[float] = field(default_factory=list)
    ended_at: float | None = None

    @property
    def pcm(self) -> bytes:
        return b"".join(self.audio)

    @property
    def seconds(self) -> float:
        return checks.pcm_seconds(self.pcm, SAMPLE_RATE)

    @property
    def first_audio_s(self) -> float | None:
        if self.first_audio_at is None or self.first_sentence_sent_at is None:
            return None
        return self.first_audio_at - self.first_sentence_sent_at


class _Source(FrameProcessor):
    """First in the pipeline: where the LLM's frames enter, and errors pushed upstream end."""

    def __init__(self) -> None:
        super().__init__(name="llm-source")
        self.errors: list[ErrorFrame] = []

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, ErrorFrame):
            self.errors.append(frame)
        await self.push_frame(frame, direction)


class _Sink(FrameProcessor):
    def __init__(self) -> None:
        super().__init__(name="collector")
        self.turn: Turn | None = None

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        turn = self.turn
        if turn is not None and direction == FrameDirection.DOWNSTREAM:
            if isinstance(frame, TTSAudioRawFrame) and frame.audio:
                now = time.monotonic()
                turn.audio_at.append(now)
                if turn.first_audio_at is None:
                    turn.first_audio_at = now
                if turn.interruption_passed:
                    turn.audio_after_interruption += len(frame.audio)
                turn.audio.append(frame.audio)
            elif isinstance(frame, InterruptionFrame) and turn.interrupted_at is not None:
                turn.interruption_passed = True
            elif isinstance(frame, TTSTextFrame):
                turn.words.append((frame.text, float(frame.pts or 0) / 1e9))
            elif isinstance(frame, TTSStoppedFrame):
                turn.stopped.set()
            elif isinstance(frame, LLMFullResponseEndFrame):
                turn.ended_at = time.monotonic()
                turn.ended.set()
        await self.push_frame(frame, direction)


class PipecatAgent:
    """One TTS service in a running pipeline; `async with` starts and ends it cleanly."""

    def __init__(self, tts: TTSService) -> None:
        self.tts = tts
        self.source = _Source()
        self.sink = _Sink()
        self.worker = PipelineWorker(
            Pipeline([self.source, tts, self.sink]),
            params=PipelineParams(audio_out_sample_rate=SAMPLE_RATE),
            cancel_on_idle_timeout=False,
        )
        self._started = asyncio.Event()
        self._run_task: asyncio.Task[None] | None = None

        @self.worker.event_handler("on_pipeline_started")
        async def _on_started(worker, frame):  # type: ignore[no-untyped-def]
            self._started.set()

    async def __aenter__(self) -> PipecatAgent:
        runner = WorkerRunner(handle_sigint=False)
        await runner.add_workers(self.worker)
        self._run_task = asyncio.create_task(runner.run())
        await asyncio.wait_for(self._started.wait(), timeout=20)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._run_task is not None
        if not self._run_task.done():
            await self.worker.queue_frame(EndFrame())
        try:
            await asyncio.wait_for(asyncio.shield(self._run_task), timeout=30)
        except TimeoutError:
            await self.worker.cancel()
            await asyncio.wait_for(self._run_task, timeout=10)

    @property
    def errors(self) -> list[ErrorFrame]:
        return self.source.errors

    async def reply(
        self,
        text: str,
        *,
        interrupt_after_chars: int | None = None,
        interval_s: float = checks.TOKEN_INTERVAL_S,
    ) -> Turn:
        """Stream `text` as an LLM reply. With `interrupt_after_chars`, barge in once that much
        text was sent and some audio came, without ending the reply."""
        turn = Turn(text)
        self.sink.turn = turn
        sentence_end = checks.first_sentence_end(text)
        sent = 0
        await self.worker.queue_frame(LLMFullResponseStartFrame())
        for token in checks.llm_tokens(text):
            if interrupt_after_chars is not None and sent >= interrupt_after_chars:
                # The user speaks while the LLM is still streaming: no more tokens come.
                await self._wait_audio(turn)
                await self.interrupt(turn)
                return turn
            await self.worker.queue_frame(LLMTextFrame(text=token))
            sent += len(token)
            if turn.first_sentence_sent_at is None and sent >= sentence_end:
                turn.first_sentence_sent_at = time.monotonic()
            await asyncio.sleep(interval_s)
        await self.worker.queue_frame(LLMFullResponseEndFrame())
        turn.all_sent_at = time.monotonic()
        return turn

    async def _wait_audio(self, turn: Turn, timeout_s: float = 15.0) -> None:
        deadline = time.monotonic() + timeout_s
        while turn.first_audio_at is None:
            assert time.monotonic() < deadline, "no audio came before the barge-in"
            await asyncio.sleep(0.01)

    async def interrupt(self, turn: Turn) -> None:
        """The user barges in: what Pipecat's user-turn processor does."""
        turn.interrupted_at = time.monotonic()
        await self.source.broadcast_interruption()

    async def finish(self, turn: Turn, timeout_s: float = 60.0) -> Turn:
        """Wait until the reply's audio is all out (its LLMFullResponseEndFrame reaches the
        sink, behind the audio)."""
        await asyncio.wait_for(turn.ended.wait(), timeout=timeout_s)
        return turn


async def check_turn(
    base_url: str, turn: Turn, c: checks.Checks, framework: str, scenario: str, *, words: bool
) -> None:
    """A whole reply: audible, as long as voxflow's own rendering, its first audio timed, and
    (where the service reports them) word timestamps that cover the text in order."""
    with c.check(f"{scenario}: audio"):
        checks.assert_audible(turn.pcm, scenario)
    with c.check(f"{scenario}: duration"):
        await checks.assert_duration_like_reference(base_url, turn.text, turn.seconds, scenario)
    with c.check(f"{scenario}: first audio"):
        checks.record_first_audio(framework, scenario, turn.first_audio_s)
    if words:
        with c.check(f"{scenario}: word timestamps"):
            checks.assert_word_timings(turn.words, turn.text, scenario)


# What Pipecat 1.14's TTSService logs when it gives up on an audio context that has been quiet
# for `stop_frame_timeout_s` (3 s), and after: none of it when the server ends the context
# itself (`done`, `isFinal`, `Flushed`, the end of an HTTP body). At TRACE and DEBUG, so only
# a watch (`LogCapture.watch`) sees them. A TTSStoppedFrame alone does not tell the two apart
# for every service: for one built with `push_stop_frames=True` (the HTTP ones) Pipecat pushes
# it for a context it timed out too; the WebSocket ones push it only on the server's end.
CONTEXT_TIMEOUT_LOGS = (
    # tts_service._next_audio_context_item: no item for 3 s, the context is over (TRACE)
    re.compile(r"time out on audio context"),
    # aggregated_frame_sequencer.force_complete: text whose words the audio never reached,
    # pushed as if spoken (DEBUG)
    re.compile(r"force-completing slot"),
    # tts_service.append_to_audio_context: audio after the timeout, for the turn still open
    # (a new context) or for one already ended (dropped) (DEBUG)
    re.compile(r"recreating audio context"),
    re.compile(r"unable to append audio to context"),
)


async def check_long_turn(
    base_url: str,
    turn: Turn,
    c: checks.Checks,
    logs: checks.LogCapture,
    framework: str,
    scenario: str,
    *,
    words: bool,
) -> None:
    """A reply whose audio in hand runs past 3 s while its later sentences are still to be
    rendered: every sentence is heard (its duration, and where the service reports them its
    word timings, cover the text), the server ends the context (a TTSStoppedFrame, and none of
    Pipecat's timeout logs), and the audio never pauses as long as Pipecat's timeout."""
    await check_turn(base_url, turn, c, framework, scenario, words=words)
    if words:
        with c.check(f"{scenario}: every sentence timed"):
            checks.assert_every_sentence_timed(turn.words, turn.text, scenario)
    with c.check(f"{scenario}: a TTSStoppedFrame ends the turn"):
        assert turn.stopped.is_set(), f"{scenario}: no TTSStoppedFrame reached the sink"
    with c.check(f"{scenario}: the server ends the context, not Pipecat's 3 s timeout"):
        logs.assert_not_watched(scenario)
    with c.check(f"{scenario}: longest quiet"):
        # The reply's end frame follows its audio context out, whichever way that ended.
        checks.record_longest_quiet(framework, scenario, turn.audio_at, turn.ended_at)


# --- the scenarios every Pipecat service runs (each test file names its service) -----------

TtsFactory = Callable[[], TTSService]


def _end(c: checks.Checks, agent: PipecatAgent, logs: checks.LogCapture, framework: str) -> None:
    with c.check("errors"):
        assert not agent.errors, agent.errors
    with c.check("logs"):
        logs.assert_clean(framework)
    c.done()


async def scenario_reply_then_next_turn(
    make_tts: TtsFactory, base_url: str, logs: checks.LogCapture, framework: str, *, words: bool
) -> None:
    """A reply streamed as LLM tokens, then the next turn on the same service."""
    c = checks.Checks(framework)
    async with PipecatAgent(make_tts()) as agent:
        first = await agent.finish(await agent.reply(checks.REPLY))
        await check_turn(base_url, first, c, framework, "reply", words=words)
        second = await agent.finish(await agent.reply(checks.NEXT_REPLY))
        await check_turn(base_url, second, c, framework, "next turn", words=words)
    _end(c, agent, logs, framework)


async def scenario_barge_in(
    make_tts: TtsFactory,
    base_url: str,
    logs: checks.LogCapture,
    framework: str,
    when: str,
    *,
    words: bool,
) -> None:
    """The user barges in mid-reply (the LLM still streaming) or after the whole reply was
    sent and ended (its audio still coming): the server stops rendering, no audio of it
    reaches the agent after that, and the same service speaks the next reply whole."""
    c = checks.Checks(f"{framework} barge-in {when}")
    await checks.wait_server_idle(base_url)
    async with PipecatAgent(make_tts()) as agent:
        if when == "mid-reply":
            cut = checks.LONG_REPLY.index("The ride")
            turn = await agent.reply(checks.LONG_REPLY, interrupt_after_chars=cut)
        else:
            turn = await agent.reply(
                checks.VERY_LONG_REPLY, interval_s=checks.FAST_TOKEN_INTERVAL_S
            )
            await asyncio.sleep(0.3)
            with c.check("audio still coming at the barge-in"):
                assert not turn.ended.is_set(), "the reply's audio had all come already"
            await agent.interrupt(turn)
        with c.check("first audio"):
            checks.record_first_audio(framework, f"barge-in {when}", turn.first_audio_s)
        with c.check("server stops rendering"):
            await checks.assert_rendering_stops(base_url, f"barge-in {when}")
        with c.check("no audio reaches the agent after the barge-in"):
            assert turn.audio_after_interruption == 0, turn.audio_after_interruption
        after = await agent.finish(await agent.reply(checks.REPLY))
        await check_turn(base_url, after, c, framework, f"after barge-in {when}", words=words)
    _end(c, agent, logs, framework)


async def scenario_long_reply(
    make_tts: TtsFactory,
    base_url: str,
    logs: checks.LogCapture,
    framework: str,
    reply: str,
    *,
    words: bool,
) -> None:
    """A reply with a long sentence among short ones (`checks.LONG_SENTENCE_REPLIES[reply]`),
    streamed as LLM tokens: its audio in hand runs past Pipecat's 3 s timeout while its later
    sentences are still to be rendered, and all of it must still be heard (issue 38)."""
    c = checks.Checks(f"{framework} long reply {reply}")
    # When the server sends each sentence depends on its load: nothing of an earlier test's
    # (a barge-in the framework never told it of) may still render.
    await checks.wait_server_idle(base_url)
    logs.watch(CONTEXT_TIMEOUT_LOGS)
    async with PipecatAgent(make_tts()) as agent:
        turn = await agent.finish(await agent.reply(checks.LONG_SENTENCE_REPLIES[reply]))
    # Checked once the pipeline has ended, so that what Pipecat logs about audio that came
    # after the turn's end (a timed-out context's) is in.
    await check_long_turn(base_url, turn, c, logs, framework, f"long reply {reply}", words=words)
    _end(c, agent, logs, framework)


async def scenario_idle_pause(
    make_tts: TtsFactory, base_url: str, logs: checks.LogCapture, framework: str, *, words: bool
) -> None:
    """A reply, 3 s of silence on the connection, then another reply."""
    c = checks.Checks(f"{framework} idle pause")
    async with PipecatAgent(make_tts()) as agent:
        await agent.finish(await agent.reply(checks.NEXT_REPLY))
        await asyncio.sleep(3.0)
        turn = await agent.finish(await agent.reply(checks.REPLY))
        await check_turn(base_url, turn, c, framework, "after idle pause", words=words)
    _end(c, agent, logs, framework)


async def scenario_one_reply(
    tts: TTSService, base_url: str, logs: checks.LogCapture, framework: str
) -> None:
    """One reply through a service (the HTTP ones: a request per sentence)."""
    c = checks.Checks(framework)
    async with PipecatAgent(tts) as agent:
        turn = await agent.finish(await agent.reply(checks.REPLY))
        await check_turn(base_url, turn, c, framework, "reply", words=False)
    _end(c, agent, logs, framework)
