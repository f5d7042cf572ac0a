"""LiveKit Agents' TTS as an agent session drives it: one `tts.stream()` per reply, LLM tokens
pushed with `push_text`, then `flush()` and `end_input()`, the audio read by iterating the
stream; a barge-in closes the stream (`aclose()`), which is what AgentSession does with the
reply's TTS stream when the user interrupts.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

import voxflow_checks as checks
from livekit.agents import tts as lk_tts
from livekit.agents.types import USERDATA_TIMED_TRANSCRIPT


@dataclass
class Turn:
    text: str
    audio: list[bytes] = field(default_factory=list)
    sample_rate: int = 0
    words: list[tuple[str, float]] = field(default_factory=list)
    first_sentence_sent_at: float | None = None
    all_sent_at: float | None = None
    first_audio_at: float | None = None
    closed_at: float | None = None
    audio_after_close: int = 0
    done: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def pcm(self) -> bytes:
        return b"".join(self.audio)

    @property
    def seconds(self) -> float:
        return checks.pcm_seconds(self.pcm, self.sample_rate) if self.sample_rate else 0.0

    @property
    def first_audio_s(self) -> float | None:
        if self.first_audio_at is None or self.first_sentence_sent_at is None:
            return None
        return self.first_audio_at - self.first_sentence_sent_at


class Reply:
    """One reply in flight: a producer pushing tokens and a consumer reading audio."""

    def __init__(self, tts: lk_tts.TTS, text: str, interval_s: float) -> None:
        self.turn = Turn(text)
        self.stream = tts.stream()
        self._interval_s = interval_s
        self._cut: int | None = None
        self._consumer = asyncio.create_task(self._consume())
        self._producer: asyncio.Task[None] | None = None

    def start(self, *, stop_before_chars: int | None = None) -> Reply:
        self._cut = stop_before_chars
        self._producer = asyncio.create_task(self._produce())
        return self

    async def _produce(self) -> None:
        turn = self.turn
        sentence_end = checks.first_sentence_end(turn.text)
        sent = 0
        for token in checks.llm_tokens(turn.text):
            if self._cut is not None and sent >= self._cut:
                return  # the LLM is cut off here; the caller barges in
            self.stream.push_text(token)
            sent += len(token)
            if turn.first_sentence_sent_at is None and sent >= sentence_end:
                turn.first_sentence_sent_at = time.monotonic()
            await asyncio.sleep(self._interval_s)
        self.stream.flush()
        self.stream.end_input()
        turn.all_sent_at = time.monotonic()

    async def _consume(self) -> None:
        turn = self.turn
        try:
            async for event in self.stream:
                frame = event.frame
                data = bytes(frame.data)
                for word in frame.userdata.get(USERDATA_TIMED_TRANSCRIPT) or []:
                    turn.words.append((str(word), float(word.start_time)))
                if not data:
                    continue
                turn.sample_rate = frame.sample_rate
                if turn.first_audio_at is None:
                    turn.first_audio_at = time.monotonic()
                if turn.closed_at is not None:
                    turn.audio_after_close += len(data)
                turn.audio.append(data)
        finally:
            turn.done.set()

    async def sent(self) -> None:
        assert self._producer is not None
        await self._producer

    async def finish(self, timeout_s: float = 60.0) -> Turn:
        await self.sent()
        await asyncio.wait_for(self._consumer, timeout=timeout_s)
        await self.stream.aclose()
        return self.turn

    async def wait_audio(self, timeout_s: float = 15.0) -> None:
        deadline = time.monotonic() + timeout_s
        while self.turn.first_audio_at is None:
            assert time.monotonic() < deadline, "no audio came before the barge-in"
            await asyncio.sleep(0.01)

    async def barge_in(self) -> None:
        """The user interrupts: the agent closes the reply's TTS stream."""
        await self.stream.aclose()
        # From here on: audio the stream had already queued when the agent closed it is
        # drained by the consumer during aclose() and is not late; anything after is.
        self.turn.closed_at = time.monotonic()
        if self._producer is not None and not self._producer.done():
            self._producer.cancel()
        await asyncio.gather(self._producer or asyncio.sleep(0), return_exceptions=True)
        await asyncio.wait_for(self._consumer, timeout=10)


def reply(tts: lk_tts.TTS, text: str, *, interval_s: float = checks.TOKEN_INTERVAL_S) -> Reply:
    return Reply(tts, text, interval_s).start()


def reply_cut_at(tts: lk_tts.TTS, text: str, cut: int) -> Reply:
    return Reply(tts, text, checks.TOKEN_INTERVAL_S).start(stop_before_chars=cut)


async def check_turn(
    base_url: str,
    turn: Turn,
    c: checks.Checks,
    framework: str,
    scenario: str,
    *,
    aligned: bool = True,
) -> None:
    """A whole reply: audible, as long as voxflow's own rendering, its first audio timed, and
    (``aligned``: for a plugin that gives one) its aligned transcript covering the text in
    order."""
    with c.check(f"{scenario}: audio"):
        checks.assert_audible(turn.pcm, scenario)
    with c.check(f"{scenario}: duration"):
        await checks.assert_duration_like_reference(base_url, turn.text, turn.seconds, scenario)
    with c.check(f"{scenario}: first audio"):
        checks.record_first_audio(framework, scenario, turn.first_audio_s)
    if aligned:
        with c.check(f"{scenario}: aligned transcript"):
            checks.assert_word_timings(turn.words, turn.text, scenario)
