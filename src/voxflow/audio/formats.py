"""Output format names, following the ElevenLabs ``<codec>_<rate>[_<kbps>]`` convention.

All formats are mono.

Headerless (every byte is audio, so byte counts map to durations):

- ``pcm_<rate>``: signed 16-bit little-endian;
- ``ulaw_8000`` and ``alaw_8000``: 8-bit G.711 as used by telephony (Twilio media streams, SIP).

Streams with framing, each decodable from its first bytes on while it is still being written:

- ``wav_<rate>``: one RIFF/WAVE header with open-ended sizes (0xFFFFFFFF, as for a live stream),
  then s16le samples;
- ``flac_<rate>``: ``fLaC`` and a STREAMINFO block, then FLAC frames;
- ``mp3_<rate>_<kbps>``: bare MPEG audio frames (no ID3 tag, no Xing header);
- ``opus_48000_<kbps>``: Ogg Opus, one Ogg page per batch of packets;
- ``aac_<rate>_<kbps>``: AAC-LC in ADTS frames.

``wav`` and ``flac`` come at the same rates as ``pcm``. ``openai_output_format`` maps OpenAI's
``response_format`` values (all 24 kHz, except Opus, which always codes at 48 kHz) onto these.

A client that decodes a framed stream with FFmpeg (LiveKit Agents' ``AudioStreamDecoder``,
``ffplay``, PyAV's ``av.open`` on the socket) reads a stretch of it before its first frame: the
format probe and the stream analysis. Measured with FFmpeg 7 through PyAV, fed as the stream
arrives: MP3 about 1.5 s of audio, AAC 1.3 to 2.2 s, FLAC 0.56 s, WAV with open sizes 4.3 s, Ogg
Opus its first page. ``OutputFormat.decoder_read_s`` records it, so that the server renders that
much audio without holding any back and such a client starts as early as it can.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType


class Codec(StrEnum):
    PCM = "pcm"
    ULAW = "ulaw"
    ALAW = "alaw"
    WAV = "wav"
    FLAC = "flac"
    MP3 = "mp3"
    OPUS = "opus"
    AAC = "aac"


class UnsupportedFormatError(ValueError):
    """An output format name we cannot produce."""


# Codecs whose bytes are nothing but fixed-size samples: a byte count is a duration.
_HEADERLESS = frozenset({Codec.PCM, Codec.ULAW, Codec.ALAW})

# Seconds of audio an FFmpeg-based streaming decoder reads before its first frame (see above),
# rounded up.
_DECODER_READ_S: Mapping[Codec, float] = MappingProxyType(
    {Codec.WAV: 4.5, Codec.AAC: 2.4, Codec.MP3: 1.7, Codec.FLAC: 0.7}
)

_MEDIA_TYPES: Mapping[Codec, str] = MappingProxyType(
    {
        Codec.PCM: "audio/pcm",
        Codec.ULAW: "audio/basic",
        Codec.ALAW: "audio/x-alaw-basic",
        Codec.WAV: "audio/wav",
        Codec.FLAC: "audio/flac",
        Codec.MP3: "audio/mpeg",
        Codec.OPUS: "audio/ogg",
        Codec.AAC: "audio/aac",
    }
)

_EXTENSIONS: Mapping[Codec, str] = MappingProxyType(
    {
        Codec.PCM: "pcm",
        Codec.ULAW: "ulaw",
        Codec.ALAW: "alaw",
        Codec.WAV: "wav",
        Codec.FLAC: "flac",
        Codec.MP3: "mp3",
        Codec.OPUS: "opus",
        Codec.AAC: "aac",
    }
)


@dataclass(frozen=True)
class OutputFormat:
    name: str
    codec: Codec
    sample_rate: int
    bitrate_kbps: int | None = None  # target bitrate of lossy codecs; None for the others

    @property
    def headerless(self) -> bool:
        """Every byte is sample data of a fixed size, so chunks can be cut and timed by size."""
        return self.codec in _HEADERLESS

    @property
    def bytes_per_sample(self) -> int:
        """Bytes per sample of a headerless format.

        Framed formats have none: a chunk of them may hold a header, a partial codec frame or
        many frames, so their durations come from ``StreamEncoder.samples_out`` instead.
        """
        if not self.headerless:
            raise ValueError(
                f"{self.name} is not headerless: its durations come from the encoder, not sizes"
            )
        return 2 if self.codec is Codec.PCM else 1

    @property
    def decoder_read_s(self) -> float:
        """Seconds of audio an FFmpeg-based streaming decoder reads before its first frame."""
        return _DECODER_READ_S.get(self.codec, 0.0)

    @property
    def media_type(self) -> str:
        """MIME type for an HTTP ``Content-Type``."""
        return _MEDIA_TYPES[self.codec]

    @property
    def file_extension(self) -> str:
        return _EXTENSIONS[self.codec]

    def duration_ms(self, num_bytes: int) -> float:
        """Playback time of ``num_bytes`` of a headerless format, in milliseconds."""
        if num_bytes < 0:
            raise ValueError(f"num_bytes must be >= 0, got {num_bytes}")
        return num_bytes / self.bytes_per_sample * 1000.0 / self.sample_rate


def _build(codec: Codec, rates: tuple[int, ...]) -> tuple[OutputFormat, ...]:
    return tuple(OutputFormat(f"{codec.value}_{rate}", codec, rate) for rate in rates)


def _build_lossy(codec: Codec, variants: tuple[tuple[int, int], ...]) -> tuple[OutputFormat, ...]:
    return tuple(
        OutputFormat(f"{codec.value}_{rate}_{kbps}", codec, rate, kbps) for rate, kbps in variants
    )


_PCM_RATES = (8000, 16000, 22050, 24000, 44100, 48000)

# G.711 is only defined at 8 kHz, so the companded codecs get a single rate each. The mp3 and
# opus variants are ElevenLabs' list (mp3 at 22050 and 24000 Hz is MPEG-2 layer III, with
# 576-sample frames); Opus always codes at 48 kHz internally, hence its single rate.
_FORMATS: tuple[OutputFormat, ...] = (
    *_build(Codec.PCM, _PCM_RATES),
    *_build(Codec.ULAW, (8000,)),
    *_build(Codec.ALAW, (8000,)),
    *_build(Codec.WAV, _PCM_RATES),
    *_build(Codec.FLAC, _PCM_RATES),
    *_build_lossy(
        Codec.MP3,
        (
            (22050, 32),
            (24000, 48),
            (44100, 32),
            (44100, 64),
            (44100, 96),
            (44100, 128),
            (44100, 192),
        ),
    ),
    *_build_lossy(Codec.OPUS, ((48000, 32), (48000, 64), (48000, 96), (48000, 128), (48000, 192))),
    *_build_lossy(Codec.AAC, ((24000, 64), (44100, 128))),
)

_BY_NAME: Mapping[str, OutputFormat] = MappingProxyType({fmt.name: fmt for fmt in _FORMATS})

SUPPORTED_FORMATS: tuple[str, ...] = tuple(fmt.name for fmt in _FORMATS)

OPENAI_SAMPLE_RATE = 24000

# OpenAI's ``response_format`` values. OpenAI answers 24 kHz audio; Opus has no 24 kHz
# bitstream rate that decoders honour (they decode at 48 kHz), so it takes the 48 kHz variant.
_OPENAI_FORMATS: Mapping[str, str] = MappingProxyType(
    {
        "mp3": "mp3_24000_48",
        "opus": "opus_48000_64",
        "aac": "aac_24000_64",
        "flac": f"flac_{OPENAI_SAMPLE_RATE}",
        "wav": f"wav_{OPENAI_SAMPLE_RATE}",
        "pcm": f"pcm_{OPENAI_SAMPLE_RATE}",
    }
)

OPENAI_RESPONSE_FORMATS: tuple[str, ...] = tuple(_OPENAI_FORMATS)


def parse_output_format(name: str) -> OutputFormat:
    """Look up an output format by name, e.g. ``"pcm_24000"`` or ``"mp3_44100_128"``."""
    normalized = name.strip().lower() if isinstance(name, str) else ""
    fmt = _BY_NAME.get(normalized)
    if fmt is not None:
        return fmt
    supported = ", ".join(SUPPORTED_FORMATS)
    codec = normalized.split("_", 1)[0]
    variants = [f.name for f in _FORMATS if f.codec.value == codec]
    if variants:
        # A known codec at a rate or bitrate we do not offer: name the close alternatives first,
        # since that is almost always what the caller was after.
        raise UnsupportedFormatError(
            f"unsupported output format {name!r}: {codec} is available as "
            f"{', '.join(variants)}; supported formats: {supported}"
        )
    raise UnsupportedFormatError(
        f"unsupported output format {name!r}; supported formats: {supported}"
    )


def openai_output_format(response_format: str) -> OutputFormat:
    """The output format for an OpenAI ``response_format`` (``mp3``, ``opus``, ``aac``, ...)."""
    normalized = response_format.strip().lower() if isinstance(response_format, str) else ""
    target = _OPENAI_FORMATS.get(normalized)
    if target is None:
        raise UnsupportedFormatError(
            f"unsupported response_format {response_format!r}; supported: "
            f"{', '.join(OPENAI_RESPONSE_FORMATS)}"
        )
    return _BY_NAME[target]
