"""Where a sentence may be cut early without sounding broken, and what a piece of text costs.

The first segment of a reply is on the time-to-first-audio path: the text stage costs about
0.6 ms per spoken character, so a 120-character first clause costs ~80 ms before any audio. When
no clause mark comes early, the segmenter cuts the first segment at a *phrase boundary*: a word
boundary followed by a word that usually opens a phrase (a conjunction, a preposition, a relative
or interrogative word). Cutting there keeps each piece a plausible unit of speech ("I can help
you reschedule | to next Tuesday") rather than splitting a noun from its article.

Cost is counted in estimated *spoken* characters, because the normalizer expands some written
characters a lot before the text stage sees them: a digit becomes four to six letters ("7" ->
"seven"), a currency or percent sign a word. ``spoken_cost`` is that estimate; it only has to
rank and bound, not to be exact.

Japanese (``TextLanguage.JAPANESE``) is priced in the same unit, so that the same
``ChunkingConfig`` numbers give about as much speech: English is spoken at 12 to 15 characters a
second, Japanese at 7 to 8 morae a second, so a mora costs 2 (``MORA_COST``), about what a
mora's phonemes cost the text stage (a consonant and a vowel). The morae are counted from the
script: a kana is one (``ん``, ``っ`` and ``ー`` too: each takes a mora's time), a small kana
that merges with the one before (``ゃ ゅ ょ ぁ``) none, a kanji about two, a digit what its reading
takes. Japanese phrases are told by how they end rather than by the word that opens the next
one: a bunsetsu closed by a topic, case or conjunctive particle ("会議では", "確認したので")
usually ends a phrase (``ends_phrase``).

Lengths given in characters (``ChunkingConfig.max_chars`` and its schedule minimums, the
session's piece limit) are English characters; ``written_chars`` turns them into a language's
own. A Japanese character carries about three times an English one's phonemes (Kokoro's ids:
2.65 a character on average and 3.5 at most over the Japanese agent replies of the benchmarks,
against 1.2 for English), so the limits that keep a segment within the engine's 510 ids in
English keep a Japanese one within them at a third of the characters.
"""

from __future__ import annotations

from voxflow.text.language import TextLanguage
from voxflow.text.segment_ja import is_hiragana, is_kanji, is_katakana

__all__ = [
    "MORA_COST",
    "PHRASE_STARTERS",
    "ends_phrase",
    "spoken_cost",
    "starts_phrase",
    "written_chars",
]

# English characters one written character of a language stands for (module docstring).
_CHARACTER_WEIGHT = {TextLanguage.ENGLISH: 1, TextLanguage.JAPANESE: 3}


def written_chars(english_chars: int, language: TextLanguage) -> int:
    """A length of ``english_chars`` English characters in ``language``'s characters (at
    least 1)."""
    return max(1, english_chars // _CHARACTER_WEIGHT[language])


# Words that usually begin a phrase. "of" and the articles are left out on purpose: a cut
# before them separates a head from what completes it ("the rest | of the day", "help | the").
PHRASE_STARTERS = frozenset(
    {
        # coordinating and subordinating conjunctions
        "and", "but", "or", "nor", "so", "yet", "because", "if", "unless", "when", "whenever",
        "while", "although", "though", "since", "until", "till", "before", "after", "once",
        "as", "than", "whether", "whereas", "then",
        # prepositions
        "to", "for", "with", "without", "within", "on", "at", "in", "into", "onto", "from",
        "about", "by", "over", "under", "through", "during", "between", "across", "around",
        "near", "like", "toward", "towards", "against", "along", "behind", "beyond", "via",
        "per", "past", "up", "down", "off", "out", "upon",
        # relative and interrogative words
        "that", "which", "who", "whom", "whose", "where", "what", "how", "why",
        # discourse words that open a new thought
        "please", "just", "also", "even", "still", "instead", "otherwise", "especially",
    }
)  # fmt: skip

_EDGE = "\"'([{«“‘"

# Estimated spoken characters per written character, for characters the normalizer expands.
_EXPANSION = {
    **dict.fromkeys("0123456789", 5),  # "7" -> "seven", "1999" -> "nineteen ninety-nine"
    **dict.fromkeys("$€£¥%", 8),  # "dollars", "percent"
    **dict.fromkeys("&@#+=", 5),  # "and", "at", "number", "plus", "equals"
    **dict.fromkeys("/", 4),  # "slash", "over", a date's separator
}


MORA_COST = 2
"""Spoken-cost units of one Japanese mora (see the module docstring)."""

# Small kana merge with the kana before them into one mora (きゃ, ティ).
_SMALL_KANA = frozenset("ぁぃぅぇぉゃゅょゎゕゖァィゥェォャュョヮｧｨｩｪｫｬｭｮ゛゜ﾞﾟ")
# Morae of each digit's reading (ゼロ, いち, に, さん, よん, ご, ろく, なな, はち, きゅう).
_DIGIT_MORAE = (2, 2, 1, 2, 2, 1, 2, 2, 2, 2)
# Symbols the Japanese normalizer reads as words, in morae.
_SYMBOL_MORAE = {
    **dict.fromkeys("%％", 5),  # パーセント
    **dict.fromkeys("¥￥$＄", 2),  # えん, ドル
    **dict.fromkeys("€£", 3),  # ユーロ, ポンド
}
_KANJI_MORAE = 2
_PARTICLES = frozenset(
    {
        # topic and case particles, alone after a content word: 私は, 駅で, 三時に, 東京から
        "は", "が", "も", "で", "に", "へ", "から", "まで", "より",
        "には", "では", "とは", "へは", "からは", "までは", "にも", "でも", "とも",
    }
)  # fmt: skip
# Conjunctive endings that close a clause-like phrase after a verb or adjective.
_CONJUNCTIVE_ENDINGS = (
    "ので", "けど", "けれど", "けれども", "ながら", "のに", "たら", "なら", "れば",
    "ですが", "ますが", "ましたが", "でしたが", "ですから", "ますから",
)  # fmt: skip


def starts_phrase(word: str, language: TextLanguage = TextLanguage.ENGLISH) -> bool:
    """Whether ``word`` (the text between two word boundaries, stripped) usually opens a
    phrase; never in Japanese, whose phrases are told by how they end (``ends_phrase``)."""
    if language is not TextLanguage.ENGLISH:
        return False
    return word.lstrip(_EDGE).lower() in PHRASE_STARTERS


def ends_phrase(text: str, language: TextLanguage = TextLanguage.ENGLISH) -> bool:
    """Whether ``text``, which ends at a word boundary, usually ends a phrase by what it ends
    with: in Japanese a bunsetsu whose trailing hiragana is a topic or case particle after a
    content word ("会議では", "三時に"; not "の" or "を", which bind it to the next word) or a
    conjunctive ending ("確認したので"). Never in English, whose phrases are told by the word
    that opens the next (``starts_phrase``)."""
    if language is not TextLanguage.JAPANESE:
        return False
    stripped = text.rstrip()
    start = len(stripped)
    while start > 0 and is_hiragana(stripped[start - 1]):
        start -= 1
    ending = stripped[start:]
    if start == 0 or not ending:
        return False  # all hiragana: no content word before the particle to tell it by
    return ending in _PARTICLES or ending.endswith(_CONJUNCTIVE_ENDINGS)


def spoken_cost(text: str, language: TextLanguage = TextLanguage.ENGLISH) -> int:
    """Estimated length of ``text`` once normalized, in spoken characters (see the module
    docstring for how Japanese is priced in the same unit)."""
    if language is TextLanguage.JAPANESE:
        return sum(_japanese_cost(char) for char in text)
    return sum(_EXPANSION.get(char, 1) for char in text)


def _japanese_cost(char: str) -> int:
    if char in _SMALL_KANA:
        return 0
    if is_hiragana(char) or (is_katakana(char) and char != "・"):
        return MORA_COST  # a kana, ッ and ー included
    if is_kanji(char):
        return _KANJI_MORAE * MORA_COST
    if "0" <= char <= "9":
        return _DIGIT_MORAE[ord(char) - ord("0")] * MORA_COST
    if "０" <= char <= "９":
        return _DIGIT_MORAE[ord(char) - ord("０")] * MORA_COST
    morae = _SYMBOL_MORAE.get(char)
    if morae is not None:
        return morae * MORA_COST
    if char.isascii() and char.isalpha():
        return MORA_COST  # a Latin word is read about a mora a letter
    return 1  # punctuation, spaces: a short pause, as in English
