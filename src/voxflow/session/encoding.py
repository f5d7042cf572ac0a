"""A context's audio encoding, as jobs that run off the event loop.

Encoding costs real CPU (MP3 about 26 ms per second of audio, Opus 16, AAC 22, 16-bit PCM with
resampling about 1): done inside the session it would stall every connection of the event loop
for as long as one window takes to encode. So a context does not encode; it queues an
``EncodeJob`` per step (a window's audio, a pause, the end) and the session outputs it as an
``EncodeAudio`` command. The driver runs the jobs of one context one after the other on a pool
thread (the encoder is stateful) and hands each ``Encoded`` result back to the session, which
then sends the step's word timings and audio, in the order the steps were queued.

A job touches nothing but its context's ``StreamEncoder``, which only the jobs use; the session
reads the encoder's counters from the ``Encoded`` results, never from the encoder.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from voxflow.audio.encoders import StreamEncoder
from voxflow.engines.base import FloatArray

__all__ = ["EncodeJob", "EncodeStep", "Encoded"]


class EncodeStep(enum.Enum):
    AUDIO = "audio"  # encode the next audio (may be empty: word timings still wait their turn)
    DRAIN = "drain"  # a pause: release what the resampler and codec hold back
    FINISH = "finish"  # the end of the context's audio: last frames and trailer


@dataclass(frozen=True)
class Encoded:
    """What one step produced: bytes, the output samples a decoder plays from them, and the
    encoder's count of inserted samples (codec priming, pause padding) after the step."""

    data: bytes
    samples: int
    inserted_samples: int


@dataclass(frozen=True, eq=False)
class EncodeJob:
    """One encoder step of one context; ``run`` it on any thread, in queue order."""

    encoder: StreamEncoder
    step: EncodeStep
    audio: FloatArray | None = field(default=None, repr=False)

    def run(self) -> Encoded:
        before = self.encoder.samples_out
        if self.step is EncodeStep.AUDIO:
            data = (
                self.encoder.encode(self.audio)
                if self.audio is not None and len(self.audio)
                else b""
            )
        elif self.step is EncodeStep.DRAIN:
            data = self.encoder.drain()
        else:
            data = self.encoder.finish()
        return Encoded(data, self.encoder.samples_out - before, self.encoder.inserted_samples)
