"""``voxflow soak``'s load and capacity sections, and the looping clients every section uses.

A *looping client* asks for a corpus reply, takes its audio, and asks for the next until the
time is up; refused, it waits for the server's hint (1 s, +-20%) and asks again. Clients start
spread over ``stagger_s``, so they do not all start sentences together, and alternate between
the protocols of ``options.protocols``. Two kinds:

* a *back-to-back* client asks again as soon as the last reply's audio is all in: it keeps one
  stream open at all times, so N of them are N concurrent streams, what the admission cap
  counts. The load and capacity sections use these;
* a *listener* plays each reply at real time behind its player's buffer and asks again once the
  audio would have finished playing (one caller of a voice agent); its stream is open for part
  of the time only. The faults' light load uses these.

* *unloaded*: one request at a time, nothing else running: the baseline TTFA;
* *load*: ``load_factor`` (2) x the server's admission cap of back-to-back clients for
  ``load_s``: about half are refused at any time; the admitted streams' TTFA against the
  baseline, and how fast the others were refused;
* *capacity*: N back-to-back clients for rounds of ``capacity_round_s``, N stepped up until the
  median round has an underrun, an error or a refusal, or a TTFA p95 over ``ttfa_ratio_goal`` x
  the unloaded p95; the largest N that passed, per worker: how many back-to-back clients keep
  their first-audio latency and stay real time (calls, which speak part of the time, are
  ``voxflow bench --calls``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Awaitable, Callable

from voxflow import VoxflowClient, VoxflowConnectionError
from voxflow_bench.soak.clients import (
    Outcome,
    elevenlabs_http,
    elevenlabs_ws,
    guarded,
    native_reply,
    openai_speech,
)
from voxflow_bench.soak.options import SoakOptions
from voxflow_bench.soak.report import CapacityLevel, CapacityResult, LoadResult
from voxflow_bench.soak.stats import Outcomes
from voxflow_bench.soak.wire import Endpoint, readyz, server_workers

__all__ = ["loop_clients", "run_capacity", "run_load", "stream_limit", "unloaded"]

log = logging.getLogger(__name__)
_BETWEEN_ROUNDS_S = 2.0  # before a round: the last round's streams end and the server settles


async def stream_limit(endpoint: Endpoint) -> int:
    value = (await readyz(endpoint)).get("stream_limit")
    if not isinstance(value, int):
        raise ValueError(f"{endpoint.http}/readyz has no stream_limit")
    return value


def _request(
    endpoint: Endpoint, protocol: str, text: str, options: SoakOptions
) -> Callable[[], Awaitable[Outcome]]:
    """One request of a non-native protocol, 24 kHz PCM, as a thunk."""
    playout = options.playout_buffer_ms
    if protocol == "openai":
        return lambda: openai_speech(endpoint, text, playout_ms=playout)
    if protocol == "elevenlabs-ws":
        return lambda: elevenlabs_ws(endpoint, text, playout_ms=playout)
    if protocol == "elevenlabs-http":
        return lambda: elevenlabs_http(endpoint, text, playout_ms=playout)
    raise ValueError(f"no looping client for {protocol!r}")


class _Clock:
    """A section's end: a deadline, or an event set by whoever runs the section."""

    def __init__(self, duration_s: float | None, stop: asyncio.Event | None) -> None:
        self._deadline = None if duration_s is None else time.monotonic() + duration_s
        self._stop = stop or asyncio.Event()

    def over(self) -> bool:
        return self._stop.is_set() or (
            self._deadline is not None and time.monotonic() >= self._deadline
        )

    async def sleep_until(self, moment: float) -> None:
        """Sleep until ``moment``, or less if the section ends first."""
        end = moment if self._deadline is None else min(moment, self._deadline)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stop.wait(), max(0.0, end - time.monotonic()))


async def loop_clients(
    endpoint: Endpoint,
    options: SoakOptions,
    clients: int,
    duration_s: float | None = None,
    stop: asyncio.Event | None = None,
    label: str = "load",
    listen: bool = False,
) -> list[Outcome]:
    """``clients`` looping clients (listeners when ``listen``, else back-to-back) until
    ``duration_s`` has passed or ``stop`` is set; every request's outcome (requests under way
    at the end are finished and counted)."""
    clock = _Clock(duration_s, stop)
    outcomes: list[Outcome] = []
    jitter = random.Random(clients)

    async def pause(outcome: Outcome) -> None:
        if outcome.ok:
            if listen and outcome.playback_end is not None:
                await clock.sleep_until(outcome.playback_end)  # the listener hears it out
        elif not outcome.ok:
            wait = options.backoff_s * jitter.uniform(0.8, 1.2)
            await clock.sleep_until(time.monotonic() + wait)

    async def native(index: int) -> None:
        turn = 0
        while not clock.over():
            try:
                async with VoxflowClient.connect(f"{endpoint.ws}/v1/stream") as client:
                    while not clock.over():
                        text = options.reply(index, turn).text
                        context = f"{label}-{index}-{turn}"
                        turn += 1
                        request = native_reply(
                            client, context, text, playout_ms=options.playout_buffer_ms
                        )
                        outcome = await guarded("native", request, options.run_timeout_s)
                        outcomes.append(outcome)
                        await pause(outcome)
                        if not (outcome.ok or outcome.refused):
                            break  # the connection's state is unknown: start a fresh one
            except VoxflowConnectionError:
                outcome = Outcome("native", "connect failed")
                outcomes.append(outcome)
                await pause(outcome)

    async def other(index: int, protocol: str) -> None:
        turn = 0
        while not clock.over():
            request = _request(endpoint, protocol, options.reply(index, turn).text, options)
            turn += 1
            outcome = await guarded(protocol, request(), options.run_timeout_s)
            outcomes.append(outcome)
            await pause(outcome)

    async def client(index: int) -> None:
        await clock.sleep_until(time.monotonic() + index * options.stagger_s / clients)
        protocol = options.protocols[index % len(options.protocols)]
        await (native(index) if protocol == "native" else other(index, protocol))

    async with asyncio.TaskGroup() as group:
        for index in range(clients):
            group.create_task(client(index))
    return outcomes


async def unloaded(endpoint: Endpoint, options: SoakOptions) -> Outcomes:
    """One request at a time, the protocols in turn, after an untimed warm-up of each."""
    outcomes: list[Outcome] = []
    async with VoxflowClient.connect(f"{endpoint.ws}/v1/stream") as client:
        for k in range(-4, options.unloaded_runs):
            protocol = options.protocols[k % len(options.protocols)]
            text = options.replies[k % len(options.replies)].text
            request: Awaitable[Outcome]
            if protocol == "native":
                request = native_reply(
                    client, f"unloaded-{k}", text, playout_ms=options.playout_buffer_ms
                )
            else:
                request = _request(endpoint, protocol, text, options)()
            outcome = await guarded(protocol, request, options.run_timeout_s)
            if k >= 0:  # the first ones warm the server's caches: untimed
                outcomes.append(outcome)
    result = Outcomes.of(outcomes)
    log.info(
        "unloaded: TTFA p50 %s ms, p95 %s ms", _ms(result.ttfa_ms.p50), _ms(result.ttfa_ms.p95)
    )
    return result


async def run_load(endpoint: Endpoint, options: SoakOptions, base: Outcomes) -> LoadResult:
    limit = await stream_limit(endpoint)
    clients = max(1, round(limit * options.load_factor))
    log.info(
        "load: %d back-to-back clients for %g s against a cap of %d",
        clients,
        options.load_s,
        limit,
    )
    outcomes = await loop_clients(endpoint, options, clients, options.load_s, label="load")
    loaded = Outcomes.of(outcomes)
    log.info(
        "load: %d admitted (TTFA p95 %s ms), %d refused (max %s ms)",
        loaded.admitted,
        _ms(loaded.ttfa_ms.p95),
        loaded.refused,
        _ms(loaded.refusal_ms.max),
    )
    return LoadResult(limit, clients, options.load_s, base, loaded, options.ttfa_ratio_goal)


async def run_capacity(endpoint: Endpoint, options: SoakOptions, base: Outcomes) -> CapacityResult:
    limit = await stream_limit(endpoint)
    workers = await server_workers(endpoint)
    top = max(options.capacity_levels)
    if limit < top:
        # Refused streams would make a level look lighter than it is.
        log.warning(
            "capacity: the server admits %d streams, fewer than the top level %d; start it "
            "with --max-streams %d or more (make soak does)",
            limit,
            top,
            top,
        )
    levels: list[CapacityLevel] = []
    for n in sorted(options.capacity_levels):
        rounds: list[Outcomes] = []
        for round_ in range(options.capacity_rounds):
            if levels or rounds:
                await asyncio.sleep(_BETWEEN_ROUNDS_S)
            outcomes = await loop_clients(
                endpoint, options, n, options.capacity_round_s, label=f"cap{n}r{round_}"
            )
            rounds.append(Outcomes.of(outcomes))
        level = CapacityLevel(n, tuple(rounds), base.ttfa_ms.p95, options.ttfa_ratio_goal)
        levels.append(level)
        log.info(
            "capacity: N = %d: TTFA p95 %s ms, underruns %s, %s",
            n,
            _ms(level.ttfa_p95_ms),
            level.underruns,
            "passed" if level.passed else "failed",
        )
        if not level.passed:
            break
    return CapacityResult(base.ttfa_ms.p95, workers, limit, tuple(levels))


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"
