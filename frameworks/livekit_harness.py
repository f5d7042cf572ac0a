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
    # When each audio frame reached the consumer and when the stream's iteration ended
    # (time.monotonic()); the stream's events (SynthesizedAudio) that were the last of a
    # segment (`is_final`), by their index among all `events` of the stream.
    audio_at: list[float] = field(default_factory=list)
    ended_at: float | None = None
    events: int = 0
    finals: list[int] = field(default_factory=list)

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
                if event.is_final:
                    turn.finals.append(turn.events)
                turn.events += 1
                frame = event.frame
                data = bytes(frame.data)
                for word in frame.userdata.get(USERDATA_TIMED_TRANSCRIPT) or []:
                    turn.words.append((str(word), float(word.start_time)))
                if not data:
                    continue
                turn.sample_rate = frame.sample_rate
                now = time.monotonic()
                turn.audio_at.append(now)
                if turn.first_audio_at is None:
                    turn.first_audio_at = now
                if turn.closed_at is not None:
                    turn.audio_after_close += len(data)
                turn.audio.append(data)
            turn.ended_at = time.monotonic()
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


async def check_long_turn(
    base_url: str,
    turn: Turn,
    c: checks.Checks,
    framework: str,
    scenario: str,
    *,
    aligned: bool,
    word_by_word: bool,
) -> None:
    """A reply whose audio in hand runs past 3 s while its later sentences are still to be
    rendered: every sentence is heard (its duration, and for a plugin that gives one its
    aligned transcript, cover the text), the stream ends with the end of its one segment
    (the last event `is_final`, as the plugin marks it on the server's end of the context),
    and the audio never pauses as long as Pipecat's timeout: the WebSocket plugins' own is
    10 s (`conn_options.timeout`, how long they wait for the server's next message), but a
    server quiet for 3 s fails a Pipecat agent, and the same server serves both."""
    await check_turn(base_url, turn, c, framework, scenario, aligned=aligned)
    if aligned:
        with c.check(f"{scenario}: every sentence timed"):
            checks.assert_every_sentence_timed(
                turn.words, turn.text, scenario, word_by_word=word_by_word
            )
    with c.check(f"{scenario}: the stream ends with its segment's end"):
        assert turn.ended_at is not None, f"{scenario}: the stream did not end"
        assert turn.finals == [turn.events - 1], (
            f"{scenario}: the segment's end (is_final) came at events {turn.finals} of "
            f"{turn.events}, not once as the last"
        )
    with c.check(f"{scenario}: longest quiet"):
        checks.record_longest_quiet(framework, scenario, turn.audio_at, turn.ended_at)


# --- the scenarios every LiveKit plugin runs (each test file names its plugin) ------------


def _end(c: checks.Checks, logs: checks.LogCapture, framework: str) -> None:
    with c.check("logs"):
        logs.assert_clean(framework)
    c.done()


async def scenario_reply_then_next_turn(
    tts: lk_tts.TTS, base_url: str, logs: checks.LogCapture, framework: str, *, aligned: bool
) -> None:
    """A reply streamed as LLM tokens, then the next stream on the same TTS (its pooled
    connection)."""
    c = checks.Checks(framework)
    first = await reply(tts, checks.REPLY).finish()
    await check_turn(base_url, first, c, framework, "reply", aligned=aligned)
    second = await reply(tts, checks.NEXT_REPLY).finish()
    await check_turn(base_url, second, c, framework, "next turn", aligned=aligned)
    _end(c, logs, framework)


async def scenario_barge_in(
    tts: lk_tts.TTS,
    base_url: str,
    logs: checks.LogCapture,
    framework: str,
    when: str,
    *,
    aligned: bool,
    silent: frozenset[str] = frozenset(),
    socket_closed_by_next_stream: bool = False,
) -> None:
    """The agent closes a stream mid-reply or after its end_input, while its audio still
    comes: no audio of it reaches the agent after that, and the server stops rendering,
    except where the plugin sends the server nothing at that point (``when`` in ``silent``):
    the server cannot tell a barge-in from a listener still listening, so what it still did
    goes to the summary's notes. ``socket_closed_by_next_stream``: the plugin's pool closes
    the interrupted stream's socket when the next stream starts, and the rendering must stop
    then."""
    c = checks.Checks(f"{framework} barge-in {when}")
    await checks.wait_server_idle(base_url)
    if when == "mid-reply":
        speaking = reply_cut_at(tts, checks.LONG_REPLY, checks.LONG_REPLY.index("The ride"))
        await speaking.sent()
    else:
        speaking = reply(tts, checks.VERY_LONG_REPLY, interval_s=checks.FAST_TOKEN_INTERVAL_S)
        await speaking.sent()
        await asyncio.sleep(0.3)
        with c.check("audio still coming at the barge-in"):
            assert not speaking.turn.done.is_set(), "the reply's audio had all come already"
    await speaking.wait_audio()
    await speaking.barge_in()
    with c.check("first audio"):
        checks.record_first_audio(framework, f"barge-in {when}", speaking.turn.first_audio_s)
    with c.check("no audio reaches the agent after the barge-in"):
        assert speaking.turn.audio_after_close == 0, speaking.turn.audio_after_close
    if when in silent:
        before = await checks.metrics(base_url)
        try:
            await checks.assert_rendering_stops(base_url, f"barge-in {when}")
            checks.NOTES.append(f"{framework} barge-in {when}: the server stopped rendering")
        except AssertionError as e:
            after = await checks.metrics(base_url)
            cpu = after["process_cpu_seconds_total"] - before["process_cpu_seconds_total"]
            checks.NOTES.append(
                f"{framework} barge-in {when} (no message reaches the server): {e}; "
                f"server CPU in that time {cpu:.2f} s"
            )
    else:
        with c.check("server stops rendering"):
            await checks.assert_rendering_stops(base_url, f"barge-in {when}")
    after_turn = await reply(tts, checks.REPLY).finish()
    await check_turn(base_url, after_turn, c, framework, f"after barge-in {when}", aligned=aligned)
    if socket_closed_by_next_stream:
        with c.check("server stops once the plugin closes the interrupted reply's socket"):
            await checks.assert_rendering_stops(base_url, f"barge-in {when}, socket closed")
    _end(c, logs, framework)


async def scenario_long_reply(
    tts: lk_tts.TTS,
    base_url: str,
    logs: checks.LogCapture,
    framework: str,
    reply_name: str,
    *,
    aligned: bool,
    word_by_word: bool = True,
) -> None:
    """A reply with a long sentence among short ones (`checks.LONG_SENTENCE_REPLIES`), pushed
    as LLM tokens: its audio in hand runs past 3 s while its later sentences are still to be
    rendered, and all of it must still come, ending with the segment's end (issue 38).
    `word_by_word`: the plugin's aligned transcript times each word (not each sentence)."""
    c = checks.Checks(f"{framework} long reply {reply_name}")
    # When the server sends each sentence depends on its load: nothing of an earlier test's
    # (a barge-in the plugin never told it of) may still render.
    await checks.wait_server_idle(base_url)
    turn = await reply(tts, checks.LONG_SENTENCE_REPLIES[reply_name]).finish()
    await check_long_turn(
        base_url,
        turn,
        c,
        framework,
        f"long reply {reply_name}",
        aligned=aligned,
        word_by_word=word_by_word,
    )
    _end(c, logs, framework)


async def scenario_idle_pause(
    tts: lk_tts.TTS, base_url: str, logs: checks.LogCapture, framework: str, *, aligned: bool
) -> None:
    """A reply, 3 s of silence, then another reply on the same TTS."""
    c = checks.Checks(f"{framework} idle pause")
    await reply(tts, checks.NEXT_REPLY).finish()
    await asyncio.sleep(3.0)
    turn = await reply(tts, checks.REPLY).finish()
    await check_turn(base_url, turn, c, framework, "after idle pause", aligned=aligned)
    _end(c, logs, framework)
