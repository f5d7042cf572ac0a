"""espeak-ng phonemes as Kokoro token ids: the symbol table, respelling, dropping, and the map
from each id back to the phoneme it came from (what word timings are built on)."""

from __future__ import annotations

import numpy as np
import pytest

from voxflow.engines.kokoro.phonemes import MAX_IDS, PAD, VOCAB, kokoro_ids, respelling_for
from voxflow.engines.phonemize import Phonemizer
from voxflow.text.language import TextLanguage

ENGLISH = respelling_for(TextLanguage.ENGLISH)


def test_the_table_is_kokoros_114_symbols_with_0_kept_for_the_pad() -> None:
    assert len(VOCAB) == 114
    assert all(len(symbol) == 1 for symbol in VOCAB)  # one id per symbol
    ids = list(VOCAB.values())
    assert len(set(ids)) == 114  # one symbol per id
    assert PAD == 0 and 0 not in ids
    assert min(ids) == 1 and max(ids) == 177
    assert MAX_IDS == 510  # 512 tokens with a pad on each side


def test_symbols_in_the_table_map_to_their_ids() -> None:
    tokens = kokoro_ids(("h", "ə", "l", "ˈoʊ"), ENGLISH)  # a merged cluster gives an id per symbol
    assert tokens.ids == (VOCAB["h"], VOCAB["ə"], VOCAB["l"], VOCAB["ˈ"], VOCAB["o"], VOCAB["ʊ"])
    assert tokens.ids == (50, 83, 54, 156, 57, 135)
    assert tokens.owner.tolist() == [0, 1, 2, 3, 3, 3]


@pytest.mark.parametrize(
    ("espeak", "kokoro"),
    [("r", "ɹ"), ("x", "k"), ("ʲ", "j"), ("ɬ", "l")],
)
def test_symbols_kokoro_never_saw_are_respelled(espeak: str, kokoro: str) -> None:
    tokens = kokoro_ids(("a", espeak, "a"), ENGLISH)
    assert tokens.ids == (VOCAB["a"], VOCAB[kokoro], VOCAB["a"])
    assert tokens.owner.tolist() == [0, 1, 2]


def test_r_and_x_are_respelled_although_the_table_has_them() -> None:
    # The table holds "r" (60) and "x" (66), but Kokoro's English was trained on ɹ and k.
    assert "r" in VOCAB and "x" in VOCAB
    assert kokoro_ids(("r", "x"), ENGLISH).ids == (VOCAB["ɹ"], VOCAB["k"]) == (123, 53)


def test_unknown_symbols_are_dropped_and_the_owners_skip_them() -> None:
    unknown = ("ʘ", "̪", "ǀ", "#")  # a click, a dental diacritic, another click, a hash
    for symbol in unknown:
        assert symbol not in VOCAB
    phonemes = ("t", "ʘ", "ɛ̪s", "ǀ", "#", "t")
    tokens = kokoro_ids(phonemes, ENGLISH)
    assert tokens.ids == (VOCAB["t"], VOCAB["ɛ"], VOCAB["s"], VOCAB["t"])
    assert tokens.owner.tolist() == [0, 2, 2, 5]
    assert kokoro_ids(unknown, ENGLISH).ids == ()
    assert kokoro_ids(unknown, ENGLISH).owner.shape == (0,)
    assert kokoro_ids((), ENGLISH).ids == ()


def test_owners_map_every_id_back_to_its_phoneme() -> None:
    phonemized = Phonemizer("en-us").phonemize("Rory fixed three red carts, quickly!")
    phonemes = phonemized.phonemes
    tokens = kokoro_ids(phonemes, ENGLISH)
    owner = tokens.owner
    assert owner.dtype == np.int64 and len(owner) == len(tokens.ids) > 20
    assert np.all(np.diff(owner) >= 0)  # in order
    assert owner.min() >= 0 and owner.max() < len(phonemes)
    # Each id is one symbol of its owner, respelled: rebuilding the phonemes from the ids and
    # owners gives back every phoneme's kept symbols, in order.
    symbol_of = {token: symbol for symbol, token in VOCAB.items()}
    respell = {"r": "ɹ", "x": "k", "ʲ": "j", "ɬ": "l"}
    for index, phoneme in enumerate(phonemes):
        kept = "".join(respell.get(s, s) for s in phoneme if respell.get(s, s) in VOCAB)
        mine = "".join(symbol_of[t] for t, o in zip(tokens.ids, owner, strict=True) if o == index)
        assert mine == kept, (index, phoneme)
    # English from espeak-ng is (almost) all in the table: nothing of a word is lost.
    assert len(tokens.ids) == sum(len(p) for p in phonemes)
    assert VOCAB["ɹ"] in tokens.ids and VOCAB["r"] not in tokens.ids
