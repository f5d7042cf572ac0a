from __future__ import annotations

import io
import struct
import wave
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from voxflow.audio.containers import (
    AAC_SAMPLE_RATES,
    OGG_NO_GRANULE,
    AdtsConfig,
    OggStream,
    adts_frame,
    flac_stream_header,
    ogg_crc,
    ogg_page,
    opus_pre_skip,
    opus_tags,
    wav_stream_header,
)


def reference_ogg_crc(data: bytes) -> int:
    """Bit-by-bit CRC-32 as RFC 3533 describes it: polynomial 0x04C11DB7, MSB first, init 0."""
    crc = 0
    for byte in data:
        crc ^= byte << 24
        for _ in range(8):
            crc = ((crc << 1) ^ 0x04C11DB7) if crc & 0x80000000 else crc << 1
            crc &= 0xFFFFFFFF
    return crc


@dataclass(frozen=True)
class ParsedPage:
    flags: int
    granule: int
    serial: int
    sequence: int
    packets: list[bytes]
    size: int


def parse_page(data: bytes) -> ParsedPage:
    """Strict reader of one Ogg page of whole packets; checks the CRC."""
    assert data[:4] == b"OggS"
    version, flags, granule, serial, sequence, crc = struct.unpack_from("<BBqIII", data, 4)
    assert version == 0
    count = data[26]
    table = data[27 : 27 + count]
    body = 27 + count
    packets: list[bytes] = []
    current = 0
    for lace in table:
        current += lace
        if lace < 255:
            packets.append(data[body : body + current])
            body += current
            current = 0
    assert current == 0, "a packet continues past the page"
    blank = bytearray(data[:body])
    blank[22:26] = bytes(4)
    assert reference_ogg_crc(bytes(blank)) == crc
    return ParsedPage(flags, granule, serial, sequence, packets, body)


def parse_pages(data: bytes) -> list[ParsedPage]:
    pages = []
    while data:
        page = parse_page(data)
        pages.append(page)
        data = data[page.size :]
    return pages


# -- Ogg ----------------------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=600))
def test_ogg_crc_matches_the_bitwise_definition(data: bytes) -> None:
    assert ogg_crc(data) == reference_ogg_crc(data)


def test_ogg_crc_known_value() -> None:
    # The POSIX cksum CRC (check value 0x765E7680) without its final XOR.
    assert ogg_crc(b"") == 0
    assert ogg_crc(b"123456789") == 0x89A1897F


@pytest.mark.parametrize(
    ("sizes", "table"),
    [
        ([0], [0]),
        ([10, 254], [10, 254]),
        ([255], [255, 0]),
        ([256, 3], [255, 1, 3]),
        ([510], [255, 255, 0]),
    ],
)
def test_ogg_lacing(sizes: list[int], table: list[int]) -> None:
    packets = [bytes([i + 1]) * size for i, size in enumerate(sizes)]
    page = ogg_page(7, 3, 1234, packets)
    assert list(page[27 : 27 + page[26]]) == table
    parsed = parse_page(page)
    assert parsed.packets == packets
    assert (parsed.serial, parsed.sequence, parsed.granule, parsed.flags) == (7, 3, 1234, 0)
    assert parsed.size == len(page)


def test_ogg_page_flags_and_negative_granule() -> None:
    assert parse_page(ogg_page(1, 0, 0, [b"x"], first=True)).flags == 0x02
    last = parse_page(ogg_page(1, 5, OGG_NO_GRANULE, [], last=True))
    assert last.flags == 0x04
    assert last.granule == -1
    assert last.packets == []


def test_ogg_page_refuses_more_than_255_segments() -> None:
    with pytest.raises(ValueError, match="more than a page"):
        ogg_page(1, 0, 0, [b"a"] * 256)


def test_ogg_stream_numbers_pages_and_splits_large_batches() -> None:
    stream = OggStream(serial=42)
    head = parse_pages(stream.pages([b"head"], [0], first=True))
    packets = [bytes([n % 256]) * 300 for n in range(200)]  # 2 segments each: 400 in all
    granules = [960 * (n + 1) for n in range(200)]
    body = parse_pages(stream.pages(packets, granules))
    tail = parse_pages(stream.pages([], [], last=True))
    pages = head + body + tail
    assert [p.sequence for p in pages] == list(range(len(pages)))
    assert len(body) == 2
    assert [p.packets for p in body] == [packets[:127], packets[127:]]
    assert [p.granule for p in body] == [granules[126], granules[199]]
    assert [p.flags for p in pages] == [0x02, 0, 0, 0x04]
    assert tail[0].granule == -1
    assert all(p.serial == 42 for p in pages)
    assert stream.ended
    with pytest.raises(RuntimeError, match="ended"):
        stream.pages([b"late"], [1])


def test_ogg_stream_needs_one_granule_per_packet() -> None:
    with pytest.raises(ValueError, match="one granule"):
        OggStream(1).pages([b"a", b"b"], [1])


def test_opus_head_and_tags() -> None:
    head = b"OpusHead" + struct.pack("<BBHIhB", 1, 1, 312, 48000, 0, 0)
    assert opus_pre_skip(head) == 312
    with pytest.raises(ValueError, match="OpusHead"):
        opus_pre_skip(b"OpusTags" + bytes(11))
    tags = opus_tags("voxflow é")
    vendor = "voxflow é".encode()
    assert tags == b"OpusTags" + struct.pack("<I", len(vendor)) + vendor + bytes(4)


# -- WAV, FLAC, ADTS ----------------------------------------------------------------------------


def test_wav_header_is_open_ended_and_readable() -> None:
    header = wav_stream_header(24000)
    assert len(header) == 44
    assert header[4:8] == b"\xff\xff\xff\xff"
    assert header[40:44] == b"\xff\xff\xff\xff"
    samples = struct.pack("<4h", 0, 1000, -1000, 32767)
    with wave.open(io.BytesIO(header + samples), "rb") as reader:
        assert reader.getnchannels() == 1
        assert reader.getsampwidth() == 2
        assert reader.getframerate() == 24000
        assert reader.readframes(100) == samples  # reads to the end of what has arrived


def test_flac_stream_header() -> None:
    info = bytes(range(34))
    assert flac_stream_header(info) == b"fLaC\x80\x00\x00\x22" + info
    with pytest.raises(ValueError, match="34 bytes"):
        flac_stream_header(bytes(33))


def parse_adts(frame: bytes) -> dict[str, int]:
    bits = int.from_bytes(frame[:7], "big")
    return {
        "sync": bits >> 44,
        "id": (bits >> 43) & 1,
        "layer": (bits >> 41) & 3,
        "protection_absent": (bits >> 40) & 1,
        "profile": (bits >> 38) & 3,
        "frequency_index": (bits >> 34) & 0xF,
        "channels": (bits >> 30) & 7,
        "length": (bits >> 13) & 0x1FFF,
        "fullness": (bits >> 2) & 0x7FF,
        "blocks": bits & 3,
    }


def test_adts_config_from_audio_specific_config() -> None:
    # 0x1308: AAC-LC (2), index 6 (24 kHz), mono; trailing SBR signalling is ignored.
    config = AdtsConfig.from_audio_specific_config(bytes.fromhex("130856e500"))
    assert config == AdtsConfig(object_type=2, frequency_index=6, channel_config=1)
    assert config.sample_rate == 24000
    assert AdtsConfig.from_audio_specific_config(bytes.fromhex("1208")).sample_rate == 44100


@pytest.mark.parametrize("config", [b"\x13", bytes.fromhex("2b08"), bytes.fromhex("1788")])
def test_adts_config_rejects_what_adts_cannot_carry(config: bytes) -> None:
    with pytest.raises(ValueError, match=r"AudioSpecificConfig|object type|explicit"):
        AdtsConfig.from_audio_specific_config(config)


@pytest.mark.parametrize("size", [0, 1, 341, 8184])
def test_adts_header_fields(size: int) -> None:
    config = AdtsConfig(2, AAC_SAMPLE_RATES.index(44100), 1)
    payload = bytes([size % 256]) * size
    frame = adts_frame(config, payload)
    assert frame[7:] == payload
    assert parse_adts(frame) == {
        "sync": 0xFFF,
        "id": 0,
        "layer": 0,
        "protection_absent": 1,
        "profile": 1,
        "frequency_index": 4,
        "channels": 1,
        "length": size + 7,
        "fullness": 0x7FF,
        "blocks": 0,
    }


def test_adts_rejects_oversized_frames() -> None:
    with pytest.raises(ValueError, match="does not fit"):
        adts_frame(AdtsConfig(2, 4, 1), bytes(8185))
