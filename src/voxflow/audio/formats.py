"""Output format names, following the ElevenLabs ``<codec>_<rate>`` convention.

All formats are mono and headerless: ``pcm_*`` is signed 16-bit little-endian, ``ulaw_8000`` and
``alaw_8000`` are 8-bit G.711 as used by telephony (Twilio media streams, SIP trunks).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Codec(StrEnum):
    PCM = "pcm"
    ULAW = "ulaw"
    ALAW = "alaw"


class UnsupportedFormatError(ValueError):
    """An output format name we cannot produce."""


@dataclass(frozen=True)
class OutputFormat:
    name: str
    codec: Codec
    sample_rate: int

    @property
    def bytes_per_sample(self) -> int:
        return 2 if self.codec is Codec.PCM else 1

    def duration_ms(self, num_bytes: int) -> float:
        """Playback time of ``num_bytes`` of this format, in milliseconds."""
        if num_bytes < 0:
            raise ValueError(f"num_bytes must be >= 0, got {num_bytes}")
        return num_bytes / self.bytes_per_sample * 1000.0 / self.sample_rate


def _build(codec: Codec, rates: tuple[int, ...]) -> tuple[OutputFormat, ...]:
    return tuple(OutputFormat(f"{codec.value}_{rate}", codec, rate) for rate in rates)


# G.711 is only defined at 8 kHz, so the companded codecs get a single rate each.
_FORMATS: tuple[OutputFormat, ...] = (
    *_build(Codec.PCM, (8000, 16000, 22050, 24000, 44100, 48000)),
    *_build(Codec.ULAW, (8000,)),
    *_build(Codec.ALAW, (8000,)),
)

SUPPORTED_FORMATS: tuple[str, ...] = tuple(fmt.name for fmt in _FORMATS)

# Compressed codecs that clients may already ask for (ElevenLabs names); we say they are
# planned rather than just "unknown" so callers know it is not a typo on their side.
_PLANNED_CODECS: tuple[str, ...] = ("mp3", "opus")


def parse_output_format(name: str) -> OutputFormat:
    """Look up an output format by name, e.g. ``"pcm_24000"`` or ``"ulaw_8000"``."""
    normalized = name.strip().lower() if isinstance(name, str) else ""
    for fmt in _FORMATS:
        if fmt.name == normalized:
            return fmt
    supported = ", ".join(SUPPORTED_FORMATS)
    codec = normalized.split("_", 1)[0]
    if codec in _PLANNED_CODECS:
        raise UnsupportedFormatError(
            f"output format {name!r} is not supported yet: {codec} encoding will come later; "
            f"supported formats: {supported}"
        )
    raise UnsupportedFormatError(
        f"unsupported output format {name!r}; supported formats: {supported} "
        f"(mp3 and opus formats such as 'mp3_44100_128' will come later)"
    )
