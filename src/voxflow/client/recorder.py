"""Recording one context as a client sees it, and ``speak``: send a text, record it until ``done``.

``ContextRecorder`` folds a context's events into a ``ContextResult`` (audio, arrival times,
timestamps, terminal event, errors) and runs a ``PlayoutBuffer`` on the audio as it arrives, so
benchmarks get client-side latencies and underruns without keeping the raw events around.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from voxflow.client.messages import (
    AudioEvent,
    CancelledEvent,
    DoneEvent,
    DoneMetrics,
    ErrorEvent,
    Event,
    TimestampsEvent,
    WordTimestamp,
)
from voxflow.client.playout import PlayoutBuffer, PlayoutStats

if TYPE_CHECKING:  # only for annotations: a recorder is handed its client
    from voxflow.client.client import VoxflowClient


@dataclass(frozen=True)
class ContextResult:
    """Everything one context produced, as seen by the client."""

    context_id: str
    text_sent_at: float | None  # when its first text was sent (time.monotonic())
    audio: bytes = field(repr=False)
    arrivals: tuple[float, ...]  # arrival time of each audio chunk
    durations_ms: tuple[float, ...]  # playback time of each audio chunk
    timestamps: tuple[TimestampsEvent, ...]
    done: DoneEvent | None
    cancelled: CancelledEvent | None
    errors: tuple[ErrorEvent, ...]
    playout: PlayoutStats

    @property
    def first_audio_at(self) -> float | None:
        return self.arrivals[0] if self.arrivals else None

    @property
    def ttfa_ms(self) -> float | None:
        """Client-side time to first audio: arrival of the first chunk that holds audio (not
        just a container header) - first text send."""
        if self.text_sent_at is None:
            return None
        for arrival, duration in zip(self.arrivals, self.durations_ms, strict=True):
            if duration > 0:
                return 1000.0 * (arrival - self.text_sent_at)
        return None

    @property
    def chunk_gaps_ms(self) -> tuple[float, ...]:
        """Time between consecutive audio arrivals."""
        return tuple(1000.0 * (b - a) for a, b in itertools.pairwise(self.arrivals))

    @property
    def audio_ms(self) -> float:
        return sum(self.durations_ms)

    @property
    def metrics(self) -> DoneMetrics | None:
        return None if self.done is None else self.done.metrics

    @property
    def words(self) -> tuple[WordTimestamp, ...]:
        return tuple(w for batch in self.timestamps for w in batch.words)


class ContextRecorder:
    """Collects one context's events and runs a ``PlayoutBuffer`` on its audio as it arrives."""

    def __init__(self, context_id: str, playout_buffer_ms: float = 150.0) -> None:
        self._context_id = context_id
        self._playout = PlayoutBuffer(playout_buffer_ms)
        self._text_sent_at: float | None = None
        self._audio: list[bytes] = []
        self._arrivals: list[float] = []
        self._durations: list[float] = []
        self._timestamps: list[TimestampsEvent] = []
        self._done: DoneEvent | None = None
        self._cancelled: CancelledEvent | None = None
        self._errors: list[ErrorEvent] = []

    @property
    def context_id(self) -> str:
        return self._context_id

    @property
    def playout(self) -> PlayoutBuffer:
        return self._playout

    @property
    def audio_ms(self) -> float:
        return self._playout.received_ms

    @property
    def finished(self) -> bool:
        return self._done is not None or self._cancelled is not None

    def text_sent(self, at: float) -> None:
        """Note a text send; only the first one counts (it starts the TTFA clock)."""
        if self._text_sent_at is None:
            self._text_sent_at = at

    def observe(self, event: Event) -> None:
        if event.context_id != self._context_id:
            raise ValueError(f"event of {event.context_id!r} fed to {self._context_id!r}")
        if isinstance(event, AudioEvent):
            self._audio.append(event.audio)
            self._arrivals.append(event.received_at)
            self._durations.append(event.duration_ms)
            self._playout.add(event.received_at, event.duration_ms)
        elif isinstance(event, TimestampsEvent):
            self._timestamps.append(event)
        elif isinstance(event, DoneEvent):
            self._done = event
            # A short context may never fill the start buffer: its player starts when it ends.
            self._playout.mark_end(event.received_at)
        elif isinstance(event, CancelledEvent):
            self._cancelled = event
        else:
            self._errors.append(event)

    async def collect(self, client: VoxflowClient, *, stop_on_error: bool = False) -> ContextResult:
        """Observe the context's events until done/cancelled (or its first error)."""
        async for event in client.events(self._context_id):
            self.observe(event)
            if stop_on_error and isinstance(event, ErrorEvent):
                break
        return self.result()

    def result(self) -> ContextResult:
        return ContextResult(
            context_id=self._context_id,
            text_sent_at=self._text_sent_at,
            audio=b"".join(self._audio),
            arrivals=tuple(self._arrivals),
            durations_ms=tuple(self._durations),
            timestamps=tuple(self._timestamps),
            done=self._done,
            cancelled=self._cancelled,
            errors=tuple(self._errors),
            playout=self._playout.stats(),
        )


async def speak(
    client: VoxflowClient,
    context_id: str,
    text: str,
    *,
    voice: str | None = None,
    output_format: str = "pcm_24000",
    speed: float | None = None,
    seed: int | None = None,
    playout_buffer_ms: float = 150.0,
    language: str | None = None,
) -> ContextResult:
    """Open ``context_id``, send all of ``text`` and ``end``, and record it until ``done``.

    Stops at the first error, so a rejected ``start`` does not wait for a ``done`` that will
    never come. (The protocol opens a context on text to an unknown id, so after a rejected
    ``start`` the server still speaks the text with its defaults; those events stay queued under
    ``context_id`` until taken with ``events()`` or ``pending()``.)
    """
    recorder = ContextRecorder(context_id, playout_buffer_ms)
    await client.start(
        context_id,
        voice=voice,
        output_format=output_format,
        speed=speed,
        seed=seed,
        language=language,
    )
    recorder.text_sent(await client.send_text(context_id, text))
    await client.end(context_id)
    return await recorder.collect(client, stop_on_error=True)
