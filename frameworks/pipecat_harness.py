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
import time
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
                if turn.first_audio_at is None:
                    turn.first_audio_at = time.monotonic()
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
