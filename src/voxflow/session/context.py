"""One synthesis context: its text buffer, segments in flight, audio clock and word timeline.

A context turns text into ``SegmentRequest``s and scheduler results into client events. Its audio
timeline is continuous across segments and turns: ``offset_ms`` of every chunk and ``start_ms`` of
every word are measured from the context's first sample, and word characters index the
concatenation of all text the client sent to it.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from voxflow.audio.encoders import StreamEncoder
from voxflow.audio.formats import OutputFormat
from voxflow.engines.base import Utterance, VoiceSettings
from voxflow.runtime.scheduler import Prepared, Rendered, SegmentRequest
from voxflow.session.events import AudioOut, ContextMetrics, TimestampsOut, WordTiming
from voxflow.text.buffer import ChunkingConfig, Segment, TextBuffer


@dataclass(frozen=True)
class ContextOptions:
    voice: str
    output_format: OutputFormat
    settings: VoiceSettings
    chunking: ChunkingConfig
    source_rate: int  # the voice's sample rate


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
        self._source_samples = 0  # voice-rate samples rendered so far (timeline for words)
        self._out_samples = 0  # output-rate samples sent so far (timeline for chunks)
        self._seq = 0
        self._synth_s = 0.0
        self._misses = 0
        self.words: list[WordTiming] = []

    # -- text in ---------------------------------------------------------------------------------

    def add_text(self, text: str, now: float) -> list[SegmentRequest]:
        if self.first_text_at is None and text.strip():
            self.first_text_at = now
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
            seed = self.options.settings.seed
            settings = self.options.settings
            if seed is not None:
                # One seed per segment keeps a seeded context reproducible however it is windowed.
                settings = VoiceSettings(
                    speed=settings.speed,
                    noise_scale=settings.noise_scale,
                    noise_w=settings.noise_w,
                    seed=seed + tag,
                    speaker_id=settings.speaker_id,
                )
            requests.append(SegmentRequest(segment.text, self.options.voice, settings, tag))
        return requests

    @property
    def idle(self) -> bool:
        """Every submitted segment has been rendered."""
        return self._finished_segments == self._next_tag

    # -- results in ------------------------------------------------------------------------------

    def prepared(self, event: Prepared) -> TimestampsOut | None:
        self._synth_s += event.compute_s
        segment = self._segments[event.tag]
        words = _word_timings(event.utterance, segment, self._source_samples)
        if not words:
            return None
        self.words.extend(words)
        return TimestampsOut(self.id, tuple(words))

    def rendered(self, event: Rendered, now: float) -> list[AudioOut]:
        self._synth_s += event.compute_s
        if event.late_s > 0:
            self._misses += 1
        self._source_samples += len(event.audio)
        chunks = [self.encoder.encode(event.audio)]
        if event.last:
            self._segments.pop(event.tag, None)
            self._finished_segments += 1
            if self.idle:
                # Nothing more is queued: release the resampler's held-back tail now rather than
                # when (if ever) more text arrives; later audio starts a fresh encoder (it
                # follows a pause, so there is no waveform to stay continuous with).
                chunks.append(self.encoder.flush())
                self.encoder = StreamEncoder(self.options.output_format, self.options.source_rate)
        return [self._audio(data, now) for data in chunks if data]

    def segment_failed(self, tag: int) -> None:
        self._segments.pop(tag, None)
        self._finished_segments += 1

    def _audio(self, data: bytes, now: float) -> AudioOut:
        fmt = self.options.output_format
        samples = len(data) // fmt.bytes_per_sample
        offset_ms = 1000.0 * self._out_samples / fmt.sample_rate
        duration_ms = 1000.0 * samples / fmt.sample_rate
        self._out_samples += samples
        if self.first_audio_at is None:
            self.first_audio_at = now
        out = AudioOut(self.id, self._seq, offset_ms, duration_ms, data)
        self._seq += 1
        return out

    # -- read-outs -------------------------------------------------------------------------------

    @property
    def audio_ms(self) -> float:
        return 1000.0 * self._out_samples / self.options.output_format.sample_rate

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


def _word_timings(utterance: Utterance, segment: Segment, offset_samples: int) -> list[WordTiming]:
    ms_per_frame = 1000.0 * utterance.samples_per_frame / utterance.sample_rate
    offset_ms = 1000.0 * offset_samples / utterance.sample_rate
    return [
        WordTiming(
            word=w.word,
            start_ms=offset_ms + w.start_frame * ms_per_frame,
            end_ms=offset_ms + w.end_frame * ms_per_frame,
            char_start=segment.start + w.char_start,
            char_end=segment.start + w.char_end,
        )
        for w in utterance.words
    ]
