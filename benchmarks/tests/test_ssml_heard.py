"""SSML heard as intended: words spoken by ``<sub>`` and ``<phoneme>`` through the public API's
``LocalSpeaker`` and the real voice, transcribed by Whisper base (``voxflow_bench
.intelligibility``): the recogniser hears the alias or the phonemes' word, not the written one
(compared as spoken words: lower case, no punctuation)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from voxflow import (
    SSML,
    LocalSpeaker,
    SessionConfig,
    SplitCache,
    StartOptions,
    VoiceRegistry,
    build_engine,
)
from voxflow import VoiceSettings as Settings
from voxflow_bench.intelligibility import RECOGNISER_FORMAT, Transcriber, spoken_words


@pytest.fixture(scope="module")
def heard(split_cache: SplitCache | None) -> Iterator[Callable[[str, bool], str]]:
    transcriber = Transcriber()
    engine = build_engine(VoiceRegistry(), split_cache=split_cache)
    with LocalSpeaker(engine, SessionConfig("joe")) as speaker:

        def hear(text: str, ssml: bool) -> str:
            options = StartOptions(
                markup=SSML if ssml else None,
                settings=Settings(seed=1),
                output_format=RECOGNISER_FORMAT,
            )
            heard = transcriber.transcribe(speaker.say(text, options).audio)
            return " ".join(spoken_words(heard))

        yield hear


@pytest.mark.parametrize(
    ("plain", "marked", "intended"),
    [
        (
            "The UN met today.",
            'The <sub alias="United Nations">UN</sub> met today.',
            "united nations",
        ),
        (
            "I love the sky today.",
            'I love the <phoneme alphabet="cmu-arpabet" ph="W EH1 DH ER0">sky</phoneme> today.',
            "the weather",
        ),
        (
            "I love the sky today.",
            'I love the <phoneme alphabet="ipa" ph="wˈɛðɚ">sky</phoneme> today.',
            "the weather",
        ),
        (
            # The IPA convention's mark before the syllable: the voices read it before the
            # vowel (espeak-ng's place, voxflow.text.ipa); as written, Whisper heard "the water".
            "I love the sky today.",
            'I love the <phoneme alphabet="ipa" ph="ˈwɛðɚ">sky</phoneme> today.',
            "the weather",
        ),
    ],
)  # fmt: skip
def test_an_alias_or_phoneme_word_is_heard_as_intended(
    heard: Callable[[str, bool], str], plain: str, marked: str, intended: str
) -> None:
    assert intended in heard(marked, True)
    assert intended not in heard(plain, False)  # the written word, without the markup
