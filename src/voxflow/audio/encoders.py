"""Per-stream encoding of float32 model audio into the client's output format.

Headerless formats (PCM, G.711) and WAV are produced here; FLAC, MP3, Opus and AAC go through
``voxflow.audio.compressed``.

G.711 (ITU-T, 1988) mu-law and A-law are implemented here with numpy so that telephony
formats need no extra dependency; both map 16-bit linear PCM to 8-bit codes with a
sign bit, a 3-bit segment (exponent) and a 4-bit step within the segment (mantissa).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from voxflow.audio.compressed import COMPRESSED_CODECS, CodecStream
from voxflow.audio.containers import wav_stream_header
from voxflow.audio.formats import Codec, OutputFormat
from voxflow.audio.pcm import to_pcm16
from voxflow.audio.resample import StreamResampler

# mu-law works on 14-bit magnitudes biased by 33, which makes every segment boundary a power
# of two; 0x1FFF is the largest biased magnitude the 8 segments can hold.
_ULAW_BIAS = 33
_ULAW_MAX = 0x1FFF
# A-law works on the top 13 bits of the sample.
_ALAW_SHIFT = 3


def _bit_length(values: npt.NDArray[np.int32]) -> npt.NDArray[np.int32]:
    """``int.bit_length`` per element (0 for 0); G.711 segments are powers of two."""
    # frexp returns the binary exponent, exact for integers far beyond the int16 range.
    _, exponent = np.frexp(values.astype(np.float64))
    return exponent.astype(np.int32)


def encode_ulaw(pcm: npt.NDArray[np.int16]) -> bytes:
    """G.711 mu-law codes for 16-bit linear samples (as the ITU-T G.191 reference coder)."""
    samples = np.asarray(pcm, dtype=np.int32)
    negative = samples < 0
    # One's complement for negatives (-1 -> 0) keeps the code table symmetric around zero.
    magnitude = (np.where(negative, ~samples, samples) >> 2) + _ULAW_BIAS
    magnitude = np.minimum(magnitude, _ULAW_MAX)
    exponent = _bit_length(magnitude >> 6)
    mantissa = (magnitude >> (exponent + 1)) & 0x0F
    code: npt.NDArray[np.int32] = np.where(negative, 0x80, 0x00) | (exponent << 4) | mantissa
    # All bits are sent inverted (positive samples end up with the top bit set), so that an
    # idle line of all ones decodes as silence.
    return (~code & 0xFF).astype(np.uint8).tobytes()


def decode_ulaw(data: bytes) -> npt.NDArray[np.int16]:
    """16-bit linear samples for G.711 mu-law codes (each at the middle of its step)."""
    codes = ~np.frombuffer(data, dtype=np.uint8).astype(np.int32) & 0xFF
    exponent = (codes >> 4) & 0x07
    mantissa = codes & 0x0F
    # Step midpoint in 16-bit units: the bias of 33 (14-bit) is 132 in 16-bit samples.
    magnitude = (((mantissa << 3) + 4 * _ULAW_BIAS) << exponent) - 4 * _ULAW_BIAS
    return np.where(codes & 0x80, -magnitude, magnitude).astype(np.int16)


def encode_alaw(pcm: npt.NDArray[np.int16]) -> bytes:
    """G.711 A-law codes for 16-bit linear samples."""
    samples = np.asarray(pcm, dtype=np.int32) >> _ALAW_SHIFT
    negative = samples < 0
    # One's complement for negatives: -1 maps to magnitude 0, keeping the code table symmetric.
    magnitude = np.where(negative, -samples - 1, samples)
    # int16 input gives 13-bit magnitudes <= 0xFFF, so the segment is always 0..7.
    segment = _bit_length(magnitude >> 5)
    # Segments 0 and 1 share the same step size (the linear part of the A-law curve).
    shift = np.maximum(segment, 1)
    mantissa = (magnitude >> shift) & 0x0F
    code = (segment << 4) | mantissa
    # Even bits are inverted (0x55) so that low-level signals still have transitions on the
    # line; the sign bit is set for non-negative samples.
    return (code ^ np.where(negative, 0x55, 0xD5)).astype(np.uint8).tobytes()


def decode_alaw(data: bytes) -> npt.NDArray[np.int16]:
    """16-bit linear samples for G.711 A-law codes (each at the middle of its step)."""
    codes = np.frombuffer(data, dtype=np.uint8).astype(np.int32) ^ 0x55
    segment = (codes >> 4) & 0x07
    mantissa = codes & 0x0F
    linear = (mantissa << 4) + np.where(segment == 0, 8, 0x108)
    magnitude = linear << np.maximum(segment - 1, 0)
    signed: npt.NDArray[np.int32] = np.where(codes & 0x80, magnitude, -magnitude)
    return signed.astype(np.int16)


class StreamEncoder:
    """Turns one stream of float32 audio at ``source_rate`` into bytes of ``fmt``.

    A stream is ``encode`` calls as audio arrives, ``drain`` at every pause (the stream goes on
    afterwards) and one ``finish`` at its end. Each call returns the bytes ready to send, which
    may be empty. Headers (WAV, FLAC, Ogg) come out with the first call's bytes.

    Durations: a chunk of a framed format is not a whole number of samples, so callers time
    chunks with ``samples_out``, the output-rate samples a decoder plays from everything returned
    so far (take the difference around a call). ``inserted_samples`` counts those that are not
    source audio: codec priming a decoder plays at the start (MP3, AAC) and the silence ``drain``
    pads with; source time ``t`` plays at stream time ``t + inserted_samples / sample_rate``, with
    the value read when that audio is encoded.
    """

    def __init__(self, fmt: OutputFormat, source_rate: int) -> None:
        self.format = fmt
        self.source_rate = source_rate
        self._resampler = StreamResampler(source_rate, fmt.sample_rate)
        self._codec = CodecStream(fmt) if fmt.codec in COMPRESSED_CODECS else None
        self._header = wav_stream_header(fmt.sample_rate) if fmt.codec is Codec.WAV else b""
        self._raw_samples = 0
        self._finished = False

    @property
    def latency_samples(self) -> int:
        """Source samples held back by the resampler until more input or ``drain``/``finish``."""
        return self._resampler.latency_samples

    @property
    def frame_size(self) -> int:
        """Output samples per codec frame: the unit audio is coded in (1 for PCM and G.711)."""
        return self._codec.frame_size if self._codec is not None else 1

    @property
    def samples_out(self) -> int:
        """Output-rate samples a decoder plays from all the bytes returned so far."""
        return self._codec.samples_out if self._codec is not None else self._raw_samples

    @property
    def inserted_samples(self) -> int:
        """Of the stream's samples so far, those not from the source (priming, pause padding)."""
        return self._codec.inserted_samples if self._codec is not None else 0

    def encode(self, chunk: npt.NDArray[np.float32]) -> bytes:
        """Encode the next chunk; may return ``b""`` while the resampler or codec holds it back."""
        if self._finished:
            raise RuntimeError("encode() called after finish()")
        return self._write(self._resampler.process(chunk))

    def drain(self) -> bytes:
        """Pause: everything encoded so far, without ending the stream.

        The resampler's held-back tail is released (later audio follows a pause, so there is no
        waveform to stay continuous with) and codecs pad their partial frame and lookahead with
        silence (see ``inserted_samples``). Cheap and empty when nothing new was encoded.
        """
        if self._finished:
            raise RuntimeError("drain() called after finish()")
        out = self._write(self._resampler.flush())
        self._resampler = StreamResampler(self.source_rate, self.format.sample_rate)
        if self._codec is not None:
            out += self._codec.drain()
        return out

    def finish(self) -> bytes:
        """End of stream: the remaining audio and any trailer (Ogg's end-of-stream page).

        Further calls return ``b""``; ``encode`` and ``drain`` then raise ``RuntimeError``.
        """
        if self._finished:
            return b""
        out = self._write(self._resampler.flush())
        if self._codec is not None:
            out += self._codec.finish()
        self._finished = True
        return out

    def _write(self, audio: npt.NDArray[np.float32]) -> bytes:
        if self._codec is not None:
            return self._codec.encode(audio)
        header, self._header = self._header, b""
        self._raw_samples += len(audio)
        return header + self._convert(audio)

    def _convert(self, audio: npt.NDArray[np.float32]) -> bytes:
        if len(audio) == 0:
            return b""
        pcm = to_pcm16(audio)
        if self.format.codec in (Codec.PCM, Codec.WAV):
            return pcm
        samples = np.frombuffer(pcm, dtype="<i2")
        if self.format.codec is Codec.ULAW:
            return encode_ulaw(samples)
        return encode_alaw(samples)
