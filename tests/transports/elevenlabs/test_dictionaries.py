"""ElevenLabs' pronunciation dictionaries through its real SDK, against a real server."""

from __future__ import annotations

import base64
import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from elevenlabs.client import ElevenLabs
from elevenlabs.core.api_error import ApiError
from elevenlabs.pronunciation_dictionaries import (
    BodyAddAPronunciationDictionaryV1PronunciationDictionariesAddFromRulesPostRulesItem_Alias as Alias,  # noqa: E501
)
from elevenlabs.pronunciation_dictionaries import (
    BodyAddAPronunciationDictionaryV1PronunciationDictionariesAddFromRulesPostRulesItem_Phoneme as Phoneme,  # noqa: E501
)
from elevenlabs.types import PronunciationDictionaryVersionLocator

from voxflow.text.pls import parse_pls

PLS = """<?xml version="1.0" encoding="UTF-8"?>
<lexicon version="1.0" xmlns="http://www.w3.org/2005/01/pronunciation-lexicon"
         alphabet="x-cmu" xml:lang="en-US">
  <lexeme><grapheme>UN</grapheme><alias>United Nations</alias></lexeme>
  <lexeme><grapheme>tomato</grapheme><phoneme>T AH0 M AA1 T OW2</phoneme></lexeme>
</lexicon>
"""
TEXT = "The UN met today."


@pytest.fixture
def client(
    server_factory: Callable[..., contextlib.AbstractContextManager[str]], tmp_path: Path
) -> Iterator[ElevenLabs]:
    with (
        server_factory(dictionaries_dir=tmp_path, workers=2) as url,
        httpx.Client(timeout=60) as http,
    ):
        yield ElevenLabs(base_url=url, api_key="not-needed", httpx_client=http)


def _span(
    client: ElevenLabs, locators: list[PronunciationDictionaryVersionLocator] | None
) -> tuple[bytes, tuple[float, float]]:
    response = client.text_to_speech.convert_with_timestamps(
        "joe",
        text=TEXT,
        output_format="pcm_22050",
        pronunciation_dictionary_locators=locators,
    )
    alignment = response.alignment
    assert alignment is not None
    # The alignment indexes the written text, whatever was spoken.
    assert "".join(alignment.characters) == TEXT
    start = TEXT.index("UN")
    word = (
        alignment.character_start_times_seconds[start],
        alignment.character_end_times_seconds[start + 1],
    )
    return base64.b64decode(response.audio_base_64), word


def test_dictionaries_from_a_file_and_rules_then_spoken(client: ElevenLabs) -> None:
    from_file = client.pronunciation_dictionaries.create_from_file(
        name="Acronyms", file=("acronyms.pls", PLS.encode(), "application/pls+xml")
    )
    assert from_file.version_rules_num == 2
    from_rules = client.pronunciation_dictionaries.create_from_rules(
        name="Brands",
        rules=[
            Alias(string_to_replace="voxflow", alias="vox flow"),
            Phoneme(string_to_replace="gif", phoneme="dʒɪf", alphabet="ipa"),
        ],
    )
    listed = client.pronunciation_dictionaries.list()
    assert [d.id for d in listed.pronunciation_dictionaries] == [from_file.id, from_rules.id]
    got = client.pronunciation_dictionaries.get(from_rules.id)
    assert got.latest_version_id == from_rules.version_id
    assert [rule.string_to_replace for rule in got.rules] == ["voxflow", "gif"]
    downloaded = b"".join(
        client.pronunciation_dictionaries.download(from_file.id, from_file.version_id)
    )
    assert [rule.grapheme for rule in parse_pls(downloaded)] == ["UN", "tomato"]

    # A new version through add-rules; the old one stays addressable.
    added = client.pronunciation_dictionaries.rules.add(
        from_rules.id, rules=[Alias(string_to_replace="GIF", alias="jiff")]
    )
    assert added.version_id != from_rules.version_id and added.version_rules_num == 2

    plain_audio, plain_word = _span(client, None)
    locators = [
        PronunciationDictionaryVersionLocator(
            pronunciation_dictionary_id=from_file.id, version_id=from_file.version_id
        ),
        PronunciationDictionaryVersionLocator(pronunciation_dictionary_id=from_rules.id),
    ]
    audio, word = _span(client, locators)
    assert audio != plain_audio
    # "UN" is one written word, timed over all of "United Nations".
    assert word[1] - word[0] > (plain_word[1] - plain_word[0]) + 0.3


def test_unknown_dictionary_is_refused_in_elevenlabs_shape(client: ElevenLabs) -> None:
    with pytest.raises(ApiError) as refused:
        b"".join(
            client.text_to_speech.convert(
                "joe",
                text=TEXT,
                pronunciation_dictionary_locators=[
                    PronunciationDictionaryVersionLocator(pronunciation_dictionary_id="nope")
                ],
            )
        )
    assert refused.value.status_code == 404
    assert isinstance(refused.value.body, dict)
    assert refused.value.body["detail"]["status"] == "unknown_dictionary"


def test_malformed_pls_is_refused(client: ElevenLabs) -> None:
    with pytest.raises(ApiError) as refused:
        client.pronunciation_dictionaries.create_from_file(
            name="bad", file=("bad.pls", b"<lexicon><lexeme>", "application/pls+xml")
        )
    assert refused.value.status_code == 400
    assert isinstance(refused.value.body, dict)
    assert "well-formed" in refused.value.body["detail"]["message"]


def test_each_api_key_has_its_own_dictionaries_through_a_server(
    server_factory: Callable[..., contextlib.AbstractContextManager[str]], tmp_path: Path
) -> None:
    with (
        server_factory(dictionaries_dir=tmp_path, workers=1, api_keys=("key-a", "key-b")) as url,
        httpx.Client(timeout=60) as http,
    ):
        alice = ElevenLabs(base_url=url, api_key="key-a", httpx_client=http)
        bob = ElevenLabs(base_url=url, api_key="key-b", httpx_client=http)
        made = alice.pronunciation_dictionaries.create_from_rules(
            name="Mine", rules=[Alias(string_to_replace="UN", alias="United Nations")]
        )
        assert [
            d.id for d in alice.pronunciation_dictionaries.list().pronunciation_dictionaries
        ] == [made.id]
        # Another key neither lists, reads nor uses it: to it, the id names nothing.
        assert bob.pronunciation_dictionaries.list().pronunciation_dictionaries == []
        with pytest.raises(ApiError) as raised:
            bob.pronunciation_dictionaries.get(made.id)
        assert raised.value.status_code == 404
        locator = PronunciationDictionaryVersionLocator(pronunciation_dictionary_id=made.id)
        with pytest.raises(ApiError) as raised:
            bob.text_to_speech.convert_with_timestamps(
                "joe", text=TEXT, pronunciation_dictionary_locators=[locator]
            )
        assert raised.value.status_code == 404
        spoken = alice.text_to_speech.convert_with_timestamps(
            "joe", text=TEXT, output_format="pcm_22050", pronunciation_dictionary_locators=[locator]
        )
        assert spoken.alignment is not None and "".join(spoken.alignment.characters) == TEXT
