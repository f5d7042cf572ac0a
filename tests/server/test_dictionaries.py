from __future__ import annotations

from pathlib import Path

import pytest

from voxflow.config import ServerSettings
from voxflow.server.dictionaries import DirectoryDictionaryStore
from voxflow.server.security import AccessPolicy
from voxflow.session.dictionaries import DictionaryLimits, Locator, locators_lexicon
from voxflow.session.errors import SessionError
from voxflow.text.pls import PronunciationRule

ALIAS = PronunciationRule("voxflow", alias="vox flow")
PHONEME = PronunciationRule("tomato", phoneme="T AH0 M AA1 T OW2", alphabet="cmu-arpabet")
KEY_A = "a" * 32
KEY_B = "b" * 32


def test_a_new_store_on_the_same_directory_sees_everything(tmp_path: Path) -> None:
    first = DirectoryDictionaryStore(tmp_path)
    created = first.create(KEY_A, "Brands", "ours", [ALIAS])
    updated = first.add_version(KEY_A, created.dictionary_id, [ALIAS, PHONEME])

    # A restart, or a second replica on a shared directory.
    second = DirectoryDictionaryStore(tmp_path)
    info = second.get(KEY_A, created.dictionary_id)
    assert info == updated
    assert [v.rules for v in info.versions] == [1, 2]
    assert info.latest.version_id != created.latest.version_id
    assert second.list(KEY_A) == [info]
    assert second.rules(KEY_A, created.dictionary_id, created.latest.version_id) == (ALIAS,)
    assert second.rules(KEY_A, created.dictionary_id, None) == (ALIAS, PHONEME)
    # Each store sees what the other writes after it started.
    third = second.create(KEY_A, "Names", None, [])
    assert [d.dictionary_id for d in first.list(KEY_A)] == [
        created.dictionary_id,
        third.dictionary_id,
    ]


def test_the_latest_version_is_read_from_the_directory_at_most_once_a_second(
    tmp_path: Path,
) -> None:
    now = [0.0]
    first = DirectoryDictionaryStore(tmp_path, clock=lambda: now[0])
    replica = DirectoryDictionaryStore(tmp_path)
    created = first.create(KEY_A, "Brands", None, [ALIAS])
    assert first.rules(KEY_A, created.dictionary_id, None) == (ALIAS,)
    replica.add_version(KEY_A, created.dictionary_id, [PHONEME])
    now[0] = 0.9  # another replica's change: not read yet
    assert first.rules(KEY_A, created.dictionary_id, None) == (ALIAS,)
    now[0] = 1.0
    assert first.rules(KEY_A, created.dictionary_id, None) == (PHONEME,)
    first.add_version(KEY_A, created.dictionary_id, [ALIAS, PHONEME])  # its own: seen at once
    assert first.rules(KEY_A, created.dictionary_id, None) == (ALIAS, PHONEME)


def test_keys_do_not_see_each_others_dictionaries(tmp_path: Path) -> None:
    store = DirectoryDictionaryStore(tmp_path)
    mine = store.create(KEY_A, "Mine", None, [ALIAS])
    assert store.list(KEY_B) == []
    assert store.list("") == []
    with pytest.raises(SessionError) as refused:
        store.get(KEY_B, mine.dictionary_id)
    assert refused.value.code == "unknown_dictionary"
    with pytest.raises(SessionError, match="no pronunciation dictionary"):
        locators_lexicon(store, KEY_B, [Locator(mine.dictionary_id)])


@pytest.mark.parametrize("bad", ["..", "../x", "a/b", "", "x" * 65])
def test_ids_never_name_other_paths(tmp_path: Path, bad: str) -> None:
    store = DirectoryDictionaryStore(tmp_path / "store")
    with pytest.raises(SessionError) as refused:
        store.get("", bad)
    assert refused.value.code == "unknown_dictionary"


def test_unknown_version(tmp_path: Path) -> None:
    store = DirectoryDictionaryStore(tmp_path)
    info = store.create("", "x", None, [ALIAS])
    with pytest.raises(SessionError, match="has no version 'nope'"):
        store.rules("", info.dictionary_id, "nope")


def test_limits(tmp_path: Path) -> None:
    limits = DictionaryLimits(max_dictionaries=2, max_rules=1, max_versions=2, max_name_chars=5)
    store = DirectoryDictionaryStore(tmp_path, limits)
    with pytest.raises(SessionError, match="at most 1 rules") as refused:
        store.create("", "x", None, [ALIAS, PHONEME])
    assert refused.value.code == "dictionary_limit"
    with pytest.raises(SessionError, match="1 to 5 characters") as refused:
        store.create("", "too long", None, [])
    assert refused.value.code == "invalid_dictionary"
    first = store.create("", "a", None, [ALIAS])
    store.create("", "b", None, [])
    with pytest.raises(SessionError, match="at most 2 pronunciation dictionaries"):
        store.create("", "c", None, [])
    store.create(KEY_A, "c", None, [])  # the count is per key
    store.add_version("", first.dictionary_id, [PHONEME])
    with pytest.raises(SessionError, match="at most 2 versions"):
        store.add_version("", first.dictionary_id, [])


def test_locators_apply_in_order_first_wins(tmp_path: Path) -> None:
    store = DirectoryDictionaryStore(tmp_path)
    one = store.create("", "one", None, [PronunciationRule("voxflow", alias="first")])
    two = store.create(
        "",
        "two",
        None,
        [PronunciationRule("voxflow", alias="second"), PronunciationRule("gif", alias="jif")],
    )
    lexicon = locators_lexicon(
        store, "", [Locator(one.dictionary_id), Locator(two.dictionary_id, two.latest.version_id)]
    )
    assert lexicon is not None
    assert {entry.word: entry.respelling for entry in lexicon} == {
        "voxflow": "first",
        "gif": "jif",
    }
    assert locators_lexicon(store, "", []) is None
    with pytest.raises(SessionError, match="at most 3"):
        locators_lexicon(store, "", [Locator(one.dictionary_id)] * 4)
    with pytest.raises(SessionError) as refused:
        locators_lexicon(None, "", [Locator(one.dictionary_id)])
    assert refused.value.code == "dictionaries_disabled"


def test_each_api_key_is_an_owner_of_its_own() -> None:
    policy = AccessPolicy.from_settings(ServerSettings(api_keys=("key-one", "key-two")))

    def owner(headers: list[tuple[bytes, bytes]]) -> str:
        return policy.owner({"type": "http", "headers": headers, "query_string": b""})

    one = owner([(b"xi-api-key", b"key-one")])
    assert one == owner([(b"authorization", b"Bearer key-one")])
    assert one != owner([(b"xi-api-key", b"key-two")])
    assert "key-one" not in one and len(one) == 32
    assert owner([(b"xi-api-key", b"wrong")]) == ""
    assert AccessPolicy.from_settings(ServerSettings()).owner({"headers": []}) == ""
