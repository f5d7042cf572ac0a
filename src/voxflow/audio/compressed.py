"""Compressed output streams (FLAC, MP3, Opus, AAC) through FFmpeg's encoders via PyAV.

One ``CodecStream`` per client stream: it feeds the codec exact codec frames as audio arrives and
frames each packet as soon as the codec releases it (``voxflow.audio.containers``), so a client
can start decoding from the first bytes.

Pauses. A stream must not end mid-utterance (that would write an Ogg end-of-stream page, or make
a FLAC/MP3 client treat the stream as over), yet at a pause every sample spoken so far has to reach
the client. Encoders hold audio back: the partial codec frame plus their lookahead (a frame for
LAME and FFmpeg's AAC encoder, 6.5 ms for Opus). ``drain`` pads with silence until the packets out
cover every source sample, without ending the stream. The silence is real stream time, so it is
reported (``inserted_samples``) for the caller's timeline.

Timelines. FFmpeg stamps each packet with the input-sample range it completes, shifted back by
the encoder's priming (``pts`` starts at minus the delay), so "all source audio is decodable"
means the last packet's ``pts + duration`` has reached the number of samples fed. What a client
*plays* differs per container: Ogg Opus tells decoders to drop the priming (pre-skip) and the
final padding (granule position), but bare MP3 frames and ADTS AAC carry no such information, so
decoders play every frame in full, priming included.
"""

from __future__ import annotations

import fractions
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import av
import numpy as np
import numpy.typing as npt
from av.audio.codeccontext import AudioCodecContext

from voxflow.audio.containers import (
    AdtsConfig,
    OggStream,
    adts_frame,
    flac_stream_header,
    opus_pre_skip,
    opus_tags,
)
from voxflow.audio.formats import Codec, OutputFormat

# Our streams are separate physical streams, so the Ogg serial only has to be fixed per stream;
# a constant keeps the output reproducible.
OGG_SERIAL = 0x766F7866  # "voxf"
_VENDOR = f"voxflow (PyAV {av.__version__})"
# Safety stop for drain(): every codec here covers its input within a few frames of silence.
_MAX_DRAIN_FRAMES = 16


@dataclass(frozen=True)
class _CodecSpec:
    encoder: str  # FFmpeg encoder name
    sample_format: str  # the encoder's input sample format
    # Leading samples of encoder delay that a plain decoder of this container plays (0 when the
    # container tells decoders to drop them). FFmpeg sets these in its encoder wrappers; the
    # timeline test in tests/audio/test_encoders.py fails if they ever change.
    played_priming: int


_SPECS: Mapping[Codec, _CodecSpec] = MappingProxyType(
    {
        # LAME's delay (576) plus the MP3 decoder's (529), at every sample rate.
        Codec.MP3: _CodecSpec("libmp3lame", "fltp", 1105),
        # FFmpeg's AAC encoder primes exactly one 1024-sample frame.
        Codec.AAC: _CodecSpec("aac", "fltp", 1024),
        # Opus pre-skip is signalled in OpusHead and dropped by every conforming decoder.
        Codec.OPUS: _CodecSpec("libopus", "flt", 0),
        # FLAC is lossless and has no delay.
        Codec.FLAC: _CodecSpec("flac", "s16", 0),
    }
)

COMPRESSED_CODECS: frozenset[Codec] = frozenset(_SPECS)
_INT16_MAX = 32767.0


def flac_block_size(sample_rate: int) -> int:
    """FLAC samples per frame: the largest power of two up to ~50 ms.

    A frame is only written once full, so this is audio the encoder holds back between windows;
    FLAC's own default (~105 ms) would hold twice as much, and blocks above ~50 ms barely
    compress better.
    """
    size = 256
    while size * 2 <= sample_rate // 20 and size < 4096:
        size *= 2
    return size


@dataclass(frozen=True)
class _Packet:
    data: bytes
    pts: int  # input-sample time of the packet's first sample (encoder priming is negative)
    duration: int


class CodecStream:
    """Encodes one stream of float32 mono audio at ``fmt.sample_rate`` into ``fmt``."""

    def __init__(self, fmt: OutputFormat) -> None:
        spec = _SPECS.get(fmt.codec)
        if spec is None:
            raise ValueError(f"{fmt.name} is not a compressed format")
        self.format = fmt
        self._spec = spec
        self._ctx = _open_encoder(fmt, spec)
        self.frame_size = self._ctx.frame_size
        self._time_base = fractions.Fraction(1, fmt.sample_rate)
        self._pending = np.zeros(0, dtype=np.float32)  # less than one frame, not yet encoded
        self._fed = 0  # samples given to the codec, silence included
        self._coded_end = 0  # pts + duration of the latest packet out
        self._dirty = False  # source audio arrived since the last drain()
        self._started = False
        self._finished = False
        self.samples_out = 0
        self.inserted_samples = spec.played_priming
        extradata = self._ctx.extradata or b""
        self._ogg = OggStream(OGG_SERIAL) if fmt.codec is Codec.OPUS else None
        self._pre_skip = opus_pre_skip(extradata) if fmt.codec is Codec.OPUS else 0
        self._adts = (
            AdtsConfig.from_audio_specific_config(extradata) if fmt.codec is Codec.AAC else None
        )

    def encode(self, audio: npt.NDArray[np.float32]) -> bytes:
        """Encode the next samples; returns the bytes of every packet the codec released."""
        self._check_open()
        samples = np.asarray(audio, dtype=np.float32).reshape(-1)
        if len(samples):
            self._dirty = True
        buffered = np.concatenate((self._pending, samples)) if len(self._pending) else samples
        whole = len(buffered) - len(buffered) % self.frame_size
        self._pending = buffered[whole:].copy()
        return self._emit(self._feed(buffered[:whole]))

    def drain(self) -> bytes:
        """Pause: pad with silence until every source sample so far is in a packet out.

        The stream stays open; later ``encode`` calls continue it seamlessly after the silence.
        Returns ``b""`` (and adds no silence) when no source audio arrived since the last drain.
        """
        self._check_open()
        if not self._dirty:
            return self._emit([])
        self._dirty = False
        source_end = self._fed + len(self._pending)
        pad = -len(self._pending) % self.frame_size
        frames = np.concatenate((self._pending, np.zeros(pad, dtype=np.float32)))
        self._pending = np.zeros(0, dtype=np.float32)
        packets = self._feed(frames)
        extra = 0
        while self._coded_end < source_end:
            if extra == _MAX_DRAIN_FRAMES:
                raise RuntimeError(f"{self.format.name}: encoder still holds audio after padding")
            packets += self._feed(np.zeros(self.frame_size, dtype=np.float32))
            extra += 1
        self.inserted_samples += pad + extra * self.frame_size
        return self._emit(packets)

    def finish(self) -> bytes:
        """End of stream: encode the last partial frame, flush the codec, close the container."""
        if self._finished:
            return b""
        if self._ogg is not None and self._fed + len(self._pending) == 0:
            # An Ogg Opus stream without a single audio packet is one FFmpeg (and others) refuse
            # to open; 20 ms of silence makes an empty context a valid, playable stream.
            self._pending = np.zeros(self.frame_size, dtype=np.float32)
            self.inserted_samples += self.frame_size
        packets = self._feed(self._pending)
        self._pending = np.zeros(0, dtype=np.float32)
        packets += self._collect(self._ctx.encode(None))
        out = self._emit(packets, last=True)
        self._finished = True
        return out

    # -- internals ---------------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._finished:
            raise RuntimeError("the stream has finished")

    def _feed(self, samples: npt.NDArray[np.float32]) -> list[_Packet]:
        """Encode whole frames (and, only from ``finish``, one shorter last frame)."""
        packets: list[_Packet] = []
        for start in range(0, len(samples), self.frame_size):
            chunk = samples[start : start + self.frame_size]
            packets += self._collect(self._ctx.encode(self._frame(chunk)))
        return packets

    def _frame(self, chunk: npt.NDArray[np.float32]) -> av.AudioFrame:
        if self._spec.sample_format == "s16":
            pcm = np.rint(np.clip(chunk, -1.0, 1.0) * _INT16_MAX).astype(np.int16)
            frame = av.AudioFrame.from_ndarray(pcm.reshape(1, -1), format="s16", layout="mono")
        else:
            # Planar or packed, one mono plane has the same (1, samples) shape.
            frame = av.AudioFrame.from_ndarray(
                np.ascontiguousarray(chunk).reshape(1, -1),
                format=self._spec.sample_format,
                layout="mono",
            )
        frame.sample_rate = self.format.sample_rate
        frame.time_base = self._time_base
        frame.pts = self._fed
        self._fed += len(chunk)
        return frame

    def _collect(self, packets: list[av.Packet[Any]]) -> list[_Packet]:
        out = []
        for packet in packets:
            if packet.size == 0:
                continue  # FLAC's final packet only carries updated STREAMINFO side data
            pts = packet.pts if packet.pts is not None else self._coded_end
            duration = packet.duration or 0
            self._coded_end = max(self._coded_end, pts + duration)
            out.append(_Packet(bytes(packet), pts, duration))
        return out

    def _emit(self, packets: list[_Packet], last: bool = False) -> bytes:
        out = bytearray()
        if not self._started:
            self._started = True
            out += self._header()
        codec = self.format.codec
        if self._ogg is not None:
            if packets or last:
                # One page for everything the codec released in this call: it goes out now, and a
                # page per packet would cost 27+ bytes of overhead every 20 ms.
                granules = [p.pts + p.duration + self._pre_skip for p in packets]
                out += self._ogg.pages([p.data for p in packets], granules, last=last)
            # Decoders trim to the granule position: pre-skip and final padding are not played.
            self.samples_out = max(self.samples_out, self._coded_end)
        elif self._adts is not None:
            for packet in packets:
                out += adts_frame(self._adts, packet.data)
                self.samples_out += self.frame_size
        else:
            for packet in packets:
                out += packet.data
                # MP3 frames always decode to a whole frame; FLAC frames to their block size.
                self.samples_out += self.frame_size if codec is Codec.MP3 else packet.duration
        return bytes(out)

    def _header(self) -> bytes:
        extradata = self._ctx.extradata or b""
        if self.format.codec is Codec.FLAC:
            return flac_stream_header(extradata)
        if self._ogg is not None:
            # RFC 7845: OpusHead alone on the first page, OpusTags on the next one(s).
            return self._ogg.pages([extradata], [0], first=True) + self._ogg.pages(
                [opus_tags(_VENDOR)], [0]
            )
        return b""  # MP3 and ADTS frames are self-describing


def _open_encoder(fmt: OutputFormat, spec: _CodecSpec) -> AudioCodecContext:
    ctx = av.CodecContext.create(spec.encoder, "w")
    if not isinstance(ctx, AudioCodecContext):
        raise TypeError(f"{spec.encoder} is not an audio encoder")
    ctx.sample_rate = fmt.sample_rate
    ctx.layout = "mono"
    ctx.format = spec.sample_format
    ctx.time_base = fractions.Fraction(1, fmt.sample_rate)
    # Many streams run side by side in one server process; each encoder takes one thread.
    ctx.thread_count = 1
    options: dict[str, str] = {}
    if fmt.bitrate_kbps is not None:
        ctx.bit_rate = fmt.bitrate_kbps * 1000
    if fmt.codec is Codec.FLAC:
        options["frame_size"] = str(flac_block_size(fmt.sample_rate))
    if fmt.codec is Codec.MP3:
        # The bit reservoir lets a frame borrow bytes from earlier ones, so LAME holds a frame
        # back until later frames are coded: 77-208 ms of audio in all (the most at low
        # bitrates), against 51-76 ms without it, which is a frame past the priming. That held
        # audio is latency at every pause and can swallow the whole first window, so we trade the
        # reservoir's small quality gain for it, as low-latency MP3 streamers do.
        options["reservoir"] = "0"
    if options:
        ctx.options = options
    ctx.open()
    return ctx
