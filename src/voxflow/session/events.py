"""Typed values that leave the session core: events for the client, commands for the runtime.

Transports turn events into their wire format; the driver carries commands out to the scheduler.
Nothing here knows about JSON, sockets or threads.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from voxflow.runtime.jobs import SegmentRequest
from voxflow.session.encoding import EncodeJob


@dataclass(frozen=True)
class WordTiming:
    """A spoken word: times in the context's audio, characters in the text the client sent."""

    word: str
    start_ms: float
    end_ms: float
    char_start: int
    char_end: int


@dataclass(frozen=True)
class ContextMetrics:
    ttfa_ms: float | None
    audio_ms: float
    synth_ms: float
    rtf: float | None
    chunks: int
    deadline_misses: int
    # Whether its first segment came from the phrase cache (None: it had no segment).
    first_cached: bool | None = None


@dataclass(frozen=True)
class AudioOut:
    context_id: str
    seq: int
    offset_ms: float
    duration_ms: float
    data: bytes = field(repr=False)  # encoded in the context's output format
    # On a context's first audio only: how many characters of its text had arrived when its first
    # segment was cut, i.e. the text this audio waited for (what came after, it did not).
    text_end: int | None = None
    # How long the context sent no audio before this while it owed some: since its audio before,
    # or since its text made this audio due, whichever came later (its first audio: its wait).
    quiet_s: float = 0.0


@dataclass(frozen=True)
class TimestampsOut:
    context_id: str
    words: tuple[WordTiming, ...]


@dataclass(frozen=True)
class DoneOut:
    context_id: str
    metrics: ContextMetrics


@dataclass(frozen=True)
class CancelledOut:
    context_id: str
    spoken_text: str
    played_ms: float
    latency_ms: float  # from the cancel's arrival to now; transports update it when sending
    requested_at: float  # when the cancel arrived (session clock)


@dataclass(frozen=True)
class ErrorOut:
    context_id: str | None
    code: str
    message: str
    retryable: bool = False
    retry_after_ms: float | None = None  # a full server's hint (``concurrency_limited``)


@dataclass(frozen=True)
class CloseOut:
    """Not a message: the transport closes the connection once everything before it is sent."""

    reason: str


ClientEvent = AudioOut | TimestampsOut | DoneOut | CancelledOut | ErrorOut | CloseOut


@dataclass(frozen=True)
class OpenStream:
    serial: int
    paced: bool = True  # False: render as fast as possible (a whole-text HTTP request)
    # Audio to render before any is held back (a client's decoder reads this much before it
    # plays anything: ``OutputFormat.decoder_read_s``).
    burst_s: float = 0.0
    # For the metrics' labels: a handful of voices and formats, never a client's free text.
    voice: str = ""
    output_format: str = ""


@dataclass(frozen=True)
class SubmitSegment:
    serial: int
    request: SegmentRequest


@dataclass(frozen=True)
class PrefetchSegment:
    """Render ``request`` into the phrase cache; no stream, no listener (``Session.prefetch``)."""

    request: SegmentRequest


@dataclass(frozen=True)
class CloseStream:
    serial: int


@dataclass(frozen=True)
class CancelStream:
    serial: int


@dataclass(frozen=True)
class EncodeAudio:
    """Run ``job`` off the event loop, after the earlier jobs of the same stream, and hand its
    result to ``Session.encoded`` (``voxflow.session.encoding``)."""

    serial: int
    job: EncodeJob


RuntimeCommand = (
    OpenStream | SubmitSegment | PrefetchSegment | CloseStream | CancelStream | EncodeAudio
)
Output = ClientEvent | RuntimeCommand
