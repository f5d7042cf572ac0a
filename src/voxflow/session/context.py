"""One synthesis context: its text buffer, segments in flight, audio clock and word timeline.

A context turns text into ``SegmentRequest``s and scheduler results into client events. Its audio
timeline is continuous across segments and turns: ``offset_ms`` of every chunk and ``start_ms`` of
every word are measured from the context's first sample, and word characters index the
concatenation of all text the client sent to it.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, replace

from voxflow.audio.encoders import StreamEncoder
from voxflow.audio.formats import OutputFormat
from voxflow.audio.seams import SeamJoiner, SeamSettings, SegmentMap
from voxflow.engines.base import Utterance, VoiceSettings
from voxflow.runtime.scheduler import Prepared, Rendered, SegmentRequest
from voxflow.session.events import AudioOut, ContextMetrics, TimestampsOut, WordTiming
from voxflow.text.buffer import ChunkingConfig, Segment, SegmentEnd, TextBuffer
from voxflow.text.normalize import NormalizationMode, Normalized, Normalizer


@dataclass(frozen=True)
class ContextOptions:
    voice: str
    output_format: OutputFormat
    settings: VoiceSettings
    chunking: ChunkingConfig
    source_rate: int  # the voice's sample rate
    seams: SeamSettings
    normalizer: Normalizer
    normalization: NormalizationMode


class ContextState(enum.Enum):
    OPEN = "open"
    ENDING = "ending"  # ``end`` received: finishing the audio, then ``done``


class Context:
    """State of one context; driven by ``Session``."""

    def __init__(self, context_id: str, serial: int, options: ContextOptions, now: float) -> None:
        self.id = context_id
        self.serial = serial
        self.options = options
        self.state = ContextState.OPEN
        self.buffer = TextBuffer(options.chunking)
        self.encoder = StreamEncoder(options.output_format, options.source_rate)
        self.text = ""  # everything the client sent, in order
        self.created_at = now
        self.first_text_at: float | None = None
        self.first_audio_at: float | None = None
        self._segments: dict[int, Segment] = {}
        self._next_tag = 0
        self._finished_segments = 0
        # Segment audio goes through the joiner (silence trimmed, set pauses); word timings use
        # its map, so they are sent with the first audio of their segment, not at `Prepared`.
        self.joiner = SeamJoiner(options.source_rate, options.seams)
        self._previous_boundary: SegmentEnd | None = None
        self._untimed: dict[int, Utterance] = {}  # prepared segments whose words await timing
        self._normalized: dict[int, Normalized] = {}  # spoken form of each segment in flight
        self._out_samples = 0
        self._out_rate = (
            options.output_format.sample_rate
        )  # output-rate samples sent so far (timeline for chunks)
        self._seq = 0
        self._synth_s = 0.0
        self._misses = 0
        self.words: list[WordTiming] = []

    # -- text in ---------------------------------------------------------------------------------

    def add_text(self, text: str, now: float) -> list[SegmentRequest]:
        if self.first_text_at is None and text.strip():
            self.first_text_at = now
        if self.idle and self.first_audio_at is not None:
            played_until = self.first_audio_at + self.audio_ms / 1000.0
            if now >= played_until:
                # The client has played everything: the silence already happened in real time,
                # so the next segment starts without a pause (as at the stream's start).
                self.joiner.flush()
                self._previous_boundary = None
        self.text += text
        return self._requests(self.buffer.feed(text, now))

    def flush(self) -> list[SegmentRequest]:
        return self._requests(self.buffer.flush())

    def poll(self, now: float) -> list[SegmentRequest]:
        return self._requests(self.buffer.poll(now))

    def _requests(self, segments: list[Segment]) -> list[SegmentRequest]:
        requests = []
        for segment in segments:
            tag = self._next_tag
            self._next_tag += 1
            self._segments[tag] = segment
            settings = self.options.settings
            if settings.seed is not None:
                # One seed per segment keeps a seeded context reproducible however it is windowed.
                settings = replace(settings, seed=settings.seed + tag)
            # The engine speaks the spoken form; word timings map back through `normalized`.
            normalized = self.options.normalizer.normalize(segment.text, self.options.normalization)
            self._normalized[tag] = normalized
            requests.append(SegmentRequest(normalized.text, self.options.voice, settings, tag))
        return requests

    @property
    def idle(self) -> bool:
        """Every submitted segment has been rendered."""
        return self._finished_segments == self._next_tag

    # -- results in ------------------------------------------------------------------------------

    def prepared(self, event: Prepared) -> None:
        self._synth_s += event.compute_s
        if event.utterance.words:
            self._untimed[event.tag] = event.utterance

    def rendered(self, event: Rendered, now: float) -> list[AudioOut | TimestampsOut]:
        """Client events for one rendered window: its segment's word timings (once the joiner
        has placed the segment's speech on the timeline), then its audio."""
        self._synth_s += event.compute_s
        if event.late_s > 0:
            self._misses += 1
        segment = self._segments.get(event.tag)
        utterance = self._untimed.get(event.tag)
        if event.start_frame == 0:
            last_word_end = 0
            if utterance is not None:
                last_word_end = utterance.words[-1].end_frame * utterance.samples_per_frame
            self.joiner.start_segment(self._previous_boundary, keep_until=last_word_end)
        audio = self.joiner.window(event.audio, event.last)
        out: list[AudioOut | TimestampsOut] = []
        chunks = [self._encode(lambda: self.encoder.encode(audio), now)] if len(audio) else []
        segment_map = self.joiner.segment_map
        if utterance is not None and segment_map is not None and segment is not None:
            del self._untimed[event.tag]
            # Read after encoding: codec priming inserted before this audio delays it too.
            inserted_ms = 1000.0 * self.encoder.inserted_samples / self._out_rate
            words = _word_timings(
                utterance, segment, self._normalized[event.tag], segment_map, inserted_ms
            )
            self.words.extend(words)
            out.append(TimestampsOut(self.id, tuple(words)))
        if event.last:
            # A segment that stayed silent has no audio to time its words against.
            self._untimed.pop(event.tag, None)
            self._end_segment(event.tag, segment)
            if self.idle:
                # Nothing more is queued: release what the resampler and codec hold back now
                # rather than when (if ever) more text arrives; the stream stays open.
                chunks.append(self._encode(self.encoder.drain, now))
        out.extend(chunk for chunk in chunks if chunk is not None)
        return out

    def finish(self, now: float) -> AudioOut | None:
        """End of the context's audio: the codec's last frames and trailer, if any."""
        return self._encode(self.encoder.finish, now)

    def segment_failed(self, tag: int) -> None:
        self._untimed.pop(tag, None)
        self._end_segment(tag, self._segments.get(tag))

    def _end_segment(self, tag: int, segment: Segment | None) -> None:
        self._segments.pop(tag, None)
        self._normalized.pop(tag, None)
        self._finished_segments += 1
        if segment is not None:
            self._previous_boundary = segment.boundary

    def _encode(self, step: Callable[[], bytes], now: float) -> AudioOut | None:
        """Run one encoder step and wrap its bytes; timing comes from the samples a decoder will
        play, not from byte counts (compressed formats, headers and codec frames)."""
        before = self.encoder.samples_out
        data = step()
        if not data:
            return None
        samples = self.encoder.samples_out - before
        offset_ms = 1000.0 * self._out_samples / self._out_rate
        duration_ms = 1000.0 * samples / self._out_rate
        self._out_samples += samples
        if self.first_audio_at is None and samples > 0:
            self.first_audio_at = now
        out = AudioOut(self.id, self._seq, offset_ms, duration_ms, data)
        self._seq += 1
        return out

    # -- read-outs -------------------------------------------------------------------------------

    @property
    def audio_ms(self) -> float:
        return 1000.0 * self._out_samples / self._out_rate

    def metrics(self) -> ContextMetrics:
        ttfa = None
        if self.first_audio_at is not None and self.first_text_at is not None:
            ttfa = 1000.0 * (self.first_audio_at - self.first_text_at)
        synth_ms = 1000.0 * self._synth_s
        audio_ms = self.audio_ms
        return ContextMetrics(
            ttfa_ms=ttfa,
            audio_ms=audio_ms,
            synth_ms=synth_ms,
            rtf=synth_ms / audio_ms if audio_ms > 0 else None,
            chunks=self._seq,
            deadline_misses=self._misses,
        )

    def spoken_text(self, played_ms: float) -> str:
        """The client's text up to the end of the last word fully played by ``played_ms``."""
        heard = [w for w in self.words if w.end_ms <= played_ms + 1e-6]
        if not heard:
            return ""
        start = len(self.text) - len(self.text.lstrip())
        return self.text[start : heard[-1].char_end]


def _word_timings(
    utterance: Utterance,
    segment: Segment,
    normalized: Normalized,
    segment_map: SegmentMap,
    offset_ms: float,
) -> list[WordTiming]:
    """Word timings on the context's output timeline, characters and words in the client's text.

    The engine's words are words of the spoken form; several of them can come from one written
    token ("$3.50" is five spoken words), and those become one timing for the token.
    """
    spf = utterance.samples_per_frame
    ms_per_sample = 1000.0 / utterance.sample_rate
    timings: list[WordTiming] = []
    for w in utterance.words:
        src_start, src_end = normalized.to_source(w.char_start, w.char_end)
        if src_end <= src_start:
            continue  # an inserted spoken word with no written counterpart
        start_ms = offset_ms + ms_per_sample * segment_map.to_output(w.start_frame * spf)
        end_ms = offset_ms + ms_per_sample * segment_map.to_output(w.end_frame * spf)
        char_start = segment.start + src_start
        char_end = segment.start + src_end
        if timings and char_start < timings[-1].char_end:
            last = timings[-1]
            char_end = max(char_end, last.char_end)
            timings[-1] = WordTiming(
                word=segment.text[last.char_start - segment.start : char_end - segment.start],
                start_ms=last.start_ms,
                end_ms=max(end_ms, last.end_ms),
                char_start=last.char_start,
                char_end=char_end,
            )
            continue
        timings.append(
            WordTiming(
                word=segment.text[src_start:src_end],
                start_ms=start_ms,
                end_ms=end_ms,
                char_start=char_start,
                char_end=char_end,
            )
        )
    return timings
