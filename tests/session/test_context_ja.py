"""A context of a Japanese voice reads its text as Japanese: the voice's locale picks the text
language (``voxflow.text.language.text_rules_of``), and with it the buffer's boundaries
and leads and the normalizer's number readings. Nothing is rendered: only the requests a context
makes from its text are looked at."""

from __future__ import annotations

import random

import pytest

from tests.support.language_voices import fake_voice
from voxflow.engines.base import VoiceInfo, VoiceNotFoundError
from voxflow.runtime.jobs import SegmentRequest
from voxflow.session.context import Context
from voxflow.session.options import SessionConfig, StartOptions, context_options
from voxflow.text.chunking import ChunkingConfig
from voxflow.text.language import TextLanguage, text_rules_of
from voxflow.text.lexicon import Lexicon, LexiconEntry
from voxflow.text.normalize.normalizer import Normalizer
from voxflow.text.phrases import spoken_cost

ALPHA = fake_voice("kokoro:jf_alpha", "ja_JP", "kokoro")  # Kokoro: the rest of a lead on its own
HANA = fake_voice("hana", "ja_JP", "piper")  # a lead's sentence is rendered again whole
HEART = fake_voice("kokoro:af_heart", "en_US", "kokoro")
ODD = fake_voice("odd", "", "piper")  # a locale that names no language
VOICES = {voice.name: voice for voice in (ALPHA, HANA, HEART, ODD)}

REPLY = (
    "明日の14:30からの会議では、3,000円の資料をお配りします。"
    "参加者は5人で、場所は本社の第2会議室です。ご不明な点は03-1234-5678までお電話ください。"
)
LEAD = "明日の十四時三十分からの"
REST = "会議では、三千円の資料をお配りします。"
THIRD = "参加者は五人で、場所は本社の第二会議室です。"
LAST = "ご不明な点はゼロサン、イチニーサンヨン、ゴーロクナナハチまでお電話ください。"


def lookup(name: str) -> VoiceInfo:
    try:
        return VOICES[name]
    except KeyError:
        raise VoiceNotFoundError(name, sorted(VOICES)) from None


CONFIG = SessionConfig(default_voice=HEART.name)


def _context(voice: VoiceInfo) -> Context:
    return Context("a", 1, context_options(CONFIG, StartOptions(voice=voice.name), lookup), 0.0)


def _streamed(context: Context, text: str, seed: int) -> list[SegmentRequest]:
    """The requests ``text`` makes fed in LLM tokens of one to three characters, then flushed."""
    rng = random.Random(seed)
    requests: list[SegmentRequest] = []
    at = 0
    while at < len(text):
        size = rng.randint(1, 3)
        requests += context.add_text(text[at : at + size], 0.0)
        at += size
    return requests + context.flush(0.0)


@pytest.mark.parametrize(
    ("voice", "language"),
    [
        (ALPHA, TextLanguage.JAPANESE),
        (HANA, TextLanguage.JAPANESE),
        (HEART, TextLanguage.ENGLISH),
        (ODD, TextLanguage.ENGLISH),  # read as English, as every voice was before
    ],
)
def test_the_voice_locale_picks_the_text_language(voice: VoiceInfo, language: TextLanguage) -> None:
    assert text_rules_of(voice.language) is language
    options = context_options(CONFIG, StartOptions(voice=voice.name), lookup)
    assert options.language is language
    assert options.normalizer.language is language
    assert _context(voice).buffer.language is language


def test_japanese_contexts_share_one_normalizer_with_the_servers_lexicon() -> None:
    lexicon = Lexicon([LexiconEntry("API", respelling="ay pee eye")])
    config = SessionConfig(
        default_voice=HEART.name, normalizer=CONFIG.normalizer.with_lexicon(lexicon)
    )
    first = context_options(config, StartOptions(voice=ALPHA.name), lookup).normalizer
    second = context_options(config, StartOptions(voice=HANA.name), lookup).normalizer
    assert first is second  # one memo for every Japanese context
    assert first.lexicon is config.normalizer.lexicon
    english = context_options(config, StartOptions(voice=HEART.name), lookup).normalizer
    assert english is config.normalizer
    extra = Lexicon([LexiconEntry("SDK", respelling="es dee kay")])
    request = StartOptions(voice=ALPHA.name, lexicon=extra)
    own = context_options(config, request, lookup).normalizer
    assert own.language is TextLanguage.JAPANESE
    # English entries apply to a word that stands apart, and never keep a number from being read.
    assert own.normalize("SDK を2回").text == "es dee kay を二回"
    assert own.normalize("SDKを2回").text == "SDKを二回"


def test_a_japanese_reply_is_cut_and_normalized_as_japanese_however_it_streams() -> None:
    expected = [(LEAD, False), (REST, False), (THIRD, False), (LAST, False)]
    for seed in range(5):
        requests = _streamed(_context(ALPHA), REPLY, seed)
        # Kokoro says the rest of a lead's sentence as a piece of its own (no takeover).
        assert [(r.text, r.takeover is not None) for r in requests] == expected
        assert {r.voice for r in requests} == {ALPHA.name}


def test_a_japanese_lead_is_taken_over_by_its_whole_sentence() -> None:
    requests = _streamed(_context(HANA), REPLY, seed=3)
    assert [(r.text, r.lead, r.takeover is not None) for r in requests] == [
        (LEAD, True, False),
        (LEAD + REST, False, True),
        (THIRD, False, False),
        (LAST, False, False),
    ]


def test_a_lead_said_as_it_is_reads_on_into_the_next_phrase_that_has_arrived() -> None:
    # Kokoro says a lead as it is: its text stage reads the next phrase too (its spoken form),
    # so that the lead is planned as its sentence's start, not as a reply of its own.
    context = _context(ALPHA)
    requests = context.add_text(REPLY, 0.0) + context.flush(0.0)
    assert [(r.text, r.lookahead) for r in requests] == [
        (LEAD, "会議では、"),
        (REST, ""),
        (THIRD, ""),
        (LAST, ""),
    ]
    # Streamed as LLM tokens, the lead is cut as soon as the next phrase starts: a phrase not
    # whole yet is never read on into (its reading could change with the rest of it).
    for seed in range(5):
        assert {r.lookahead for r in _streamed(_context(ALPHA), REPLY, seed)} == {""}
    # A lead whose sentence is rendered again whole needs none.
    context = _context(HANA)
    assert {r.lookahead for r in context.add_text(REPLY, 0.0) + context.flush(0.0)} == {""}


def test_a_lead_reads_on_into_no_word_that_costs_more_than_a_lead() -> None:
    top = ChunkingConfig().lead_cost[1]  # type: ignore[index]
    for kana, read_on in ((13, True), (15, False)):
        phrase = "ア" * kana + "では、"
        assert (spoken_cost(phrase, TextLanguage.JAPANESE) <= top) is read_on
        context = _context(ALPHA)
        [lead, *_] = context.add_text(f"明日の14:30からの{phrase}はい。", 0.0)
        assert lead.text == LEAD and lead.lookahead == (phrase if read_on else "")


def test_an_english_voice_reads_the_same_text_as_english() -> None:
    requests = _streamed(_context(HEART), REPLY, seed=0)
    # No English boundary (no spaces): one segment, normalized as English text always was.
    [request] = requests
    assert request.text == Normalizer().normalize(REPLY).text
    assert "十四時" not in request.text
