"""Byte framing for streamed audio: WAV and FLAC stream headers, ADTS frames and Ogg pages.

These are written here rather than by FFmpeg's muxers because a live stream needs every byte out
as soon as it exists: FFmpeg's Ogg muxer only closes a page when the *next* packet arrives (so the
last packet before a pause would be stuck), its FLAC muxer adds an 8 KiB padding block meant to be
rewritten on seek, and its WAV muxer adds a LIST chunk. The formats themselves are small:

- WAV: RIFF/WAVE with a PCM ``fmt `` chunk; sizes we cannot know yet are 0xFFFFFFFF, the value
  live-streaming writers use and decoders read as "until the end of the stream".
- FLAC: ``fLaC``, one STREAMINFO metadata block (its unknown total length and MD5 left zero, as
  the format allows for streams), then frames exactly as the encoder made them.
- ADTS (ISO/IEC 13818-7 / 14496-3): a 7-byte header in front of every raw AAC frame, which makes
  the stream self-synchronising and decodable from any frame.
- Ogg (RFC 3533) carrying Opus (RFC 7845): pages of laced packets with a CRC and a granule
  position (the 48 kHz sample count at the end of the page's last packet, pre-skip included).
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

_UNKNOWN_SIZE = 0xFFFFFFFF


def wav_stream_header(sample_rate: int, channels: int = 1, bits: int = 16) -> bytes:
    """A 44-byte WAV header for a PCM stream of unknown length."""
    block_align = channels * bits // 8
    return (
        b"RIFF"
        + struct.pack("<I", _UNKNOWN_SIZE)
        + b"WAVE"
        + b"fmt "
        + struct.pack("<IHHIIHH", 16, 1, channels, sample_rate, sample_rate * block_align,
                      block_align, bits)
        + b"data"
        + struct.pack("<I", _UNKNOWN_SIZE)
    )  # fmt: skip


FLAC_STREAMINFO_SIZE = 34


def flac_stream_header(streaminfo: bytes) -> bytes:
    """``fLaC`` and a single (hence last) STREAMINFO metadata block."""
    if len(streaminfo) != FLAC_STREAMINFO_SIZE:
        raise ValueError(f"STREAMINFO is {FLAC_STREAMINFO_SIZE} bytes, got {len(streaminfo)}")
    # Block header: last-block flag (bit 7) with type 0 (STREAMINFO), then a 24-bit length.
    return b"fLaC" + bytes((0x80,)) + len(streaminfo).to_bytes(3, "big") + streaminfo


# Sampling frequency index of MPEG-4 audio (ISO/IEC 14496-3, table 1.18).
AAC_SAMPLE_RATES: tuple[int, ...] = (
    96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000, 7350,
)  # fmt: skip
_ADTS_HEADER_SIZE = 7
_ADTS_MAX_FRAME = (1 << 13) - 1  # frame_length is a 13-bit field


@dataclass(frozen=True)
class AdtsConfig:
    """The fields an ADTS header repeats from the AudioSpecificConfig."""

    object_type: int  # 2 is AAC-LC; ADTS can only carry object types 1-4
    frequency_index: int
    channel_config: int

    @classmethod
    def from_audio_specific_config(cls, config: bytes) -> AdtsConfig:
        """Read the 5+4+4 leading bits of an AudioSpecificConfig (the encoder's extradata)."""
        if len(config) < 2:
            raise ValueError(f"AudioSpecificConfig needs at least 2 bytes, got {len(config)}")
        bits = int.from_bytes(config[:2], "big")
        object_type = bits >> 11
        frequency_index = (bits >> 7) & 0x0F
        channel_config = (bits >> 3) & 0x0F
        if not 1 <= object_type <= 4:
            raise ValueError(f"ADTS cannot carry AAC object type {object_type}")
        if frequency_index >= len(AAC_SAMPLE_RATES):
            raise ValueError(f"explicit sample rates (index {frequency_index}) do not fit ADTS")
        return cls(object_type, frequency_index, channel_config)

    @property
    def sample_rate(self) -> int:
        return AAC_SAMPLE_RATES[self.frequency_index]


def adts_frame(config: AdtsConfig, payload: bytes) -> bytes:
    """One raw AAC frame behind an ADTS header (MPEG-4, no CRC, one raw data block)."""
    length = _ADTS_HEADER_SIZE + len(payload)
    if length > _ADTS_MAX_FRAME:
        raise ValueError(f"an AAC frame of {len(payload)} bytes does not fit in ADTS")
    header = (
        (0xFFF << 44)  # syncword
        | (0 << 43)  # ID: MPEG-4
        | (0 << 41)  # layer
        | (1 << 40)  # protection_absent: no CRC
        | ((config.object_type - 1) << 38)  # profile is the object type minus one
        | (config.frequency_index << 34)
        | (0 << 33)  # private bit
        | (config.channel_config << 30)
        | (0 << 26)  # original/copy, home, copyright id bit and start
        | (length << 13)
        | (0x7FF << 2)  # buffer fullness 0x7FF: variable bitrate
        | 0  # one raw data block per frame (field is count - 1)
    )
    return header.to_bytes(_ADTS_HEADER_SIZE, "big") + payload


# -- Ogg ------------------------------------------------------------------------------------------

# Ogg's CRC-32 uses the polynomial 0x04C11DB7 *unreflected*, with a zero initial value and no
# final XOR. zlib implements the reflected form (0xEDB88320, init and final XOR 0xFFFFFFFF) in C,
# and the two are related by bit reversal: reversing the bits of every input byte, undoing zlib's
# init/final XOR (by XOR with the CRC of as many zero bytes, CRC being affine) and reversing the
# 32-bit result gives Ogg's CRC. That keeps the per-byte work in C instead of a Python loop.
_REVERSED_BYTES = bytes(int(f"{value:08b}"[::-1], 2) for value in range(256))


def ogg_crc(data: bytes) -> int:
    """CRC-32 of an Ogg page (computed with the checksum field set to zero)."""
    reflected = zlib.crc32(data.translate(_REVERSED_BYTES)) ^ zlib.crc32(bytes(len(data)))
    return int(f"{reflected:032b}"[::-1], 2)


_OGG_MAX_SEGMENTS = 255
_OGG_CONTINUED = 0x01
_OGG_BOS = 0x02
_OGG_EOS = 0x04
OGG_NO_GRANULE = -1  # "no packet ends on this page"


def _lacing(size: int) -> bytes:
    """Segment table entries of one packet: 255s, then a final value below 255 (0 if needed)."""
    return bytes((255,)) * (size // 255) + bytes((size % 255,))


def ogg_page(
    serial: int,
    sequence: int,
    granule: int,
    packets: Sequence[bytes],
    *,
    first: bool = False,
    last: bool = False,
) -> bytes:
    """One Ogg page holding whole packets (none continued across pages)."""
    table = b"".join(_lacing(len(packet)) for packet in packets)
    if len(table) > _OGG_MAX_SEGMENTS:
        raise ValueError(f"{len(packets)} packets need {len(table)} segments, more than a page")
    flags = (_OGG_BOS if first else 0) | (_OGG_EOS if last else 0)
    header = (
        b"OggS"
        + struct.pack("<BBqIII", 0, flags, granule, serial, sequence, 0)
        + bytes((len(table),))
        + table
    )
    page = bytearray(header + b"".join(packets))
    struct.pack_into("<I", page, 22, ogg_crc(bytes(page)))  # checksum sits at byte 22
    return bytes(page)


def _page_groups(packets: Sequence[bytes]) -> list[list[int]]:
    """Indices of ``packets`` split into runs whose lacing fits one page each."""
    groups: list[list[int]] = [[]]
    used = 0
    for index, packet in enumerate(packets):
        need = len(packet) // 255 + 1
        if need > _OGG_MAX_SEGMENTS:
            raise ValueError(f"a packet of {len(packet)} bytes needs more than one page")
        if used + need > _OGG_MAX_SEGMENTS:
            groups.append([])
            used = 0
        groups[-1].append(index)
        used += need
    return groups


class OggStream:
    """Pages of one logical Ogg stream; keeps the page sequence number between calls."""

    def __init__(self, serial: int) -> None:
        self.serial = serial
        self._sequence = 0
        self._ended = False

    @property
    def ended(self) -> bool:
        return self._ended

    def pages(
        self,
        packets: Sequence[bytes],
        granules: Sequence[int],
        *,
        first: bool = False,
        last: bool = False,
    ) -> bytes:
        """Pages for ``packets`` (``granules[i]`` is the granule position at the end of packet
        ``i``), as few as lacing allows; an empty, granule-less page when ``last`` and nothing is
        left, so that the stream still ends with an end-of-stream page."""
        if self._ended:
            raise RuntimeError("the Ogg stream has already ended")
        if len(packets) != len(granules):
            raise ValueError("one granule position per packet")
        groups = _page_groups(packets) if packets else [[]]
        out = bytearray()
        for number, group in enumerate(groups):
            out += ogg_page(
                self.serial,
                self._sequence,
                granules[group[-1]] if group else OGG_NO_GRANULE,
                [packets[i] for i in group],
                first=first and number == 0,
                last=last and number == len(groups) - 1,
            )
            self._sequence += 1
        self._ended = last
        return bytes(out)


def opus_pre_skip(opus_head: bytes) -> int:
    """Pre-skip (48 kHz samples a decoder drops at the start) from an ``OpusHead`` packet."""
    if len(opus_head) < 19 or not opus_head.startswith(b"OpusHead"):
        raise ValueError("not an OpusHead packet")
    pre_skip: int = struct.unpack_from("<H", opus_head, 10)[0]
    return pre_skip


def opus_tags(vendor: str) -> bytes:
    """An ``OpusTags`` packet with a vendor string and no user comments."""
    raw = vendor.encode("utf-8")
    return b"OpusTags" + struct.pack("<I", len(raw)) + raw + struct.pack("<I", 0)
