"""One turn of a call, as its listener hears it.

The tokens go out on the plan's schedule while the audio is "played" at real time from its
first chunk with no client buffer (``PlayoutBuffer(0)``), as Pipecat and LiveKit play a TTS
service's frames: any chunk that arrives after the audio before it has finished playing is a
gap the listener hears. A barged-in turn stops at the plan's moment (also when all its audio
came before then); a finished one lasts until its audio has played out. First audio is timed
from the first token's send.

A gap that falls in a pause of the LLM (from the token before the pause until
``PAUSE_ALLOWANCE_S`` after the token that ends it) is the text's, not the server's: the
listener had heard everything sent so far. It is counted apart (``starved``).

The wire counts too: a turn whose audio stops coming for longer than the server's bound
(``ServerSettings.max_quiet_s``, 1.5 s) before it has all come, from its first token to its
end, outside an LLM pause, has a *quiet* gap, whatever its listener had in hand: a framework
such as Pipecat ends a TTS context that is quiet for 3 s and drops what comes after.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import time
from collections.abc import Sequence
from dataclasses import dataclass

from voxflow import PlayoutBuffer, ServerSettings
from voxflow_bench.calls.lines import Audio, Failed, Finished, Line, LineEvent, Refused
from voxflow_bench.calls.plan import TurnPlan

__all__ = ["TurnResult", "run_turn", "split_gaps"]

_BARGE_POLL_S = 0.02
# After an LLM pause, the time the text that ends it needs to become audio: its first segment
# (a lead: a few tokens) and that segment's first window.
PAUSE_ALLOWANCE_S = 0.3

# The longest the server lets a context that owes audio go without sending some.
QUIET_BOUND_S = ServerSettings.max_quiet_s

Span = tuple[float, float]  # (start, end), time.monotonic()


@dataclass(frozen=True)
class TurnResult:
    protocol: str
    reply: str
    outcome: str  # "ok", "barged", "refused" or what went wrong
    started_at: float = 0.0  # its context was opened (time.monotonic())
    ttfa_ms: float | None = None  # first audio after the first token
    audio_ms: float = 0.0  # received
    heard_ms: float = 0.0  # played to the listener (all of it, or up to the barge-in)
    gaps: int = 0  # gaps the server is answerable for
    gap_ms: float = 0.0
    longest_gap_ms: float = 0.0
    starved_gaps: int = 0  # gaps in an LLM pause: the listener had heard all the text sent
    starved_gap_ms: float = 0.0
    quiet_gaps: int = 0  # silences on the wire longer than QUIET_BOUND_S, outside an LLM pause
    longest_quiet_ms: float = 0.0  # the longest silence on the wire, outside an LLM pause
    refusal_ms: float | None = None  # how long the refusal took
    ended_at: float = 0.0  # its audio finished playing, or it was stopped

    @property
    def admitted(self) -> bool:
        return self.outcome in ("ok", "barged")


async def _send_tokens(line: Line, turn: str, plan: TurnPlan, sent: list[float]) -> None:
    start = time.monotonic()
    for token in plan.tokens:
        delay = start + token.at_s - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        sent.append(await line.send(turn, token.text))
    await line.end(turn)


async def run_turn(line: Line, turn: str, plan: TurnPlan, timeout_s: float = 120.0) -> TurnResult:
    """Speak one turn on ``line`` (see the module docstring); always returns."""
    opened, queue = await line.begin(turn)
    result = functools.partial(TurnResult, line.protocol, plan.reply.name, started_at=opened)
    if not queue.empty():
        first = queue.get_nowait()
        if isinstance(first, Refused):
            ms = 1000.0 * (first.at - opened)
            return result("refused", refusal_ms=ms, ended_at=first.at)
        if isinstance(first, Failed):
            return result(first.message, ended_at=first.at)
        queue.put_nowait(first)
    sent: list[float] = []
    sender = asyncio.create_task(_send_tokens(line, turn, plan, sent))
    player = PlayoutBuffer(0.0)
    first_audio: float | None = None
    arrivals: list[float] = []  # when each chunk with audio came
    outcome = "timeout"
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline:
            wait = None if plan.barge_in_after_s is None else _BARGE_POLL_S
            if plan.barge_in_after_s is not None and player.started_at is not None:
                now = time.monotonic()
                if player.played_ms(now) >= 1000.0 * plan.barge_in_after_s:
                    await line.barge(turn, player.played_ms(now))
                    outcome = "barged"
                    break
            event: LineEvent | None = None
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(
                    wait if wait is not None else deadline - time.monotonic()
                ):
                    event = await queue.get()
            if event is None:
                continue
            if isinstance(event, Audio):
                if event.duration_ms > 0:
                    first_audio = first_audio or event.at
                    arrivals.append(event.at)
                    player.add(event.at, event.duration_ms)
            elif isinstance(event, Finished):
                outcome = "ok"
                arrivals.append(event.at)
                barge_ms = None if plan.barge_in_after_s is None else 1000 * plan.barge_in_after_s
                if barge_ms is not None and player.received_ms > barge_ms:
                    # All the audio is in, but the caller speaks before it has played out: the
                    # listener stops there, and the client says so as its framework does.
                    while player.played_ms(time.monotonic()) < barge_ms:
                        await asyncio.sleep(_BARGE_POLL_S)
                    await line.barge(turn, player.played_ms(time.monotonic()), ended=True)
                    outcome = "barged"
                break
            elif isinstance(event, Refused):
                outcome = "refused"
                break
            else:
                outcome = event.message
                break
    finally:
        sender.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await sender
    now = time.monotonic()
    if outcome == "refused":
        return result("refused", refusal_ms=1000.0 * (now - opened), ended_at=now)
    stats = player.stats()
    heard = stats.received_ms
    ended = now
    if outcome == "barged":
        heard = player.played_ms(now)
    elif outcome == "ok" and stats.finish_at is not None and stats.finish_at > now:
        await asyncio.sleep(stats.finish_at - now)
        ended = stats.finish_at
    ttfa = None
    if first_audio is not None and sent:
        ttfa = 1000.0 * (first_audio - sent[0])
    pause = None
    if 0 <= plan.pause_after < len(sent) - 1:
        pause = (sent[plan.pause_after], sent[plan.pause_after + 1] + PAUSE_ALLOWANCE_S)
    ours, starved = split_gaps(player.underrun_spans, pause)
    quiet, _ = split_gaps(_silences(sent[:1] + arrivals), pause)
    longest_quiet = max((b - a for a, b in quiet), default=0.0)
    return result(
        outcome,
        ttfa_ms=ttfa,
        audio_ms=stats.received_ms,
        heard_ms=heard,
        gaps=len(ours),
        gap_ms=1000.0 * sum(b - a for a, b in ours),
        longest_gap_ms=1000.0 * max((b - a for a, b in ours), default=0.0),
        starved_gaps=len(starved),
        starved_gap_ms=1000.0 * sum(b - a for a, b in starved),
        quiet_gaps=sum(1 for a, b in quiet if b - a > QUIET_BOUND_S),
        longest_quiet_ms=1000.0 * longest_quiet,
        ended_at=ended,
    )


def _silences(times: Sequence[float]) -> tuple[Span, ...]:
    """The spans between consecutive moments of ``times`` (the first token, each chunk's
    arrival, the turn's end): when nothing came from the server."""
    return tuple((a, b) for a, b in itertools.pairwise(times) if b > a)


def split_gaps(
    spans: Sequence[Span], pause_window: Span | None
) -> tuple[tuple[Span, ...], tuple[Span, ...]]:
    """The gaps (``(start, end)`` of each silence) as ``(ours, starved)``: a gap that overlaps
    the LLM pause's window is the text's (starved), any other the server's (ours)."""
    if pause_window is None:
        return tuple(spans), ()
    ours = tuple(span for span in spans if not _overlap(span, pause_window))
    starved = tuple(span for span in spans if _overlap(span, pause_window))
    return ours, starved


def _overlap(span: Span, window: Span) -> bool:
    return span[0] < window[1] and span[1] > window[0]
