"""SSML through a session (``voxflow.session.markup`` and the context that applies it), with the
stand-in engine: the pieces each element makes, timings on the written text, pauses, rate and
volume per piece, clear errors that lose nothing, and the invariant that any split of a document
into chunks gives the same audio and timings as the whole."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.instant_runtime import InstantRuntime
from voxflow.engines.registry import VoiceRegistry
from voxflow.session.events import (
    AudioOut,
    DoneOut,
    ErrorOut,
    Output,
    SubmitSegment,
    TimestampsOut,
    WordTiming,
)
from voxflow.session.markup import Cut, Markup, Pause, Restyle, Written
from voxflow.session.options import SessionConfig, StartOptions
from voxflow.session.session import Session
from voxflow.text.chunking import SegmentEnd
from voxflow.text.normalize.normalizer import Normalizer, Override
from voxflow.text.ssml import CARTESIA_TAGS, SSML, SsmlDialect, SsmlError, Style

RATE = 22050

DOCUMENT = (
    "<speak><p><s>Sure thing!</s> Your code is "
    '<say-as interpret-as="characters">AB-12</say-as>.<break time="700ms"/> '
    'The <sub alias="United Nations">UN</sub> met on <say-as interpret-as="date" format="mdy">'
    '3/5/2024</say-as>, and <prosody rate="slow" volume="-6dB">this part is slow</prosody> '
    'but <phoneme alphabet="cmu-arpabet" ph="T AH0 M EY1 T OW2">tomato</phoneme> is not.</p>'
    "</speak>"
)
WRITTEN = (
    "Sure thing! Your code is AB-12. The UN met on 3/5/2024, and this part is slow but tomato "
    "is not."
)


@pytest.fixture(scope="module")
def registry() -> VoiceRegistry:
    return VoiceRegistry(None)


def _session(registry: VoiceRegistry) -> Session:
    config = SessionConfig(default_voice="joe", default_format=f"pcm_{RATE}")
    return Session(config, registry.get)


def _spoken(
    registry: VoiceRegistry, chunks: list[str], dialect: SsmlDialect | None = SSML
) -> tuple[Session, list[Output]]:
    session = _session(registry)
    session.start("a", StartOptions(markup=dialect), 0.0)
    for chunk in chunks:
        session.text("a", chunk, 0.0)
    session.end("a", 0.0)
    return session, InstantRuntime(session).serve(0.0)


def _words(outputs: list[Output]) -> list[WordTiming]:
    return [w for o in outputs if isinstance(o, TimestampsOut) for w in o.words]


def _audio(outputs: list[Output]) -> np.ndarray:
    data = b"".join(o.data for o in outputs if isinstance(o, AudioOut))
    return np.frombuffer(data, dtype="<i2").astype(np.float32) / 32768.0


def _pieces(outputs: list[Output]) -> list[str]:
    return [o.request.text for o in outputs if isinstance(o, SubmitSegment)]


def _errors(outputs: list[Output]) -> list[ErrorOut]:
    return [o for o in outputs if isinstance(o, ErrorOut)]


# -- the markup's steps --------------------------------------------------------------------------


def test_markup_steps_say_where_to_cut_pause_and_restyle() -> None:
    markup = Markup(SSML, Normalizer())
    steps = markup.feed('Hi.<break time="300ms"/> <prosody rate="fast">Go</prosody><s>Now</s>')
    assert steps == [
        Written("Hi.", "Hi."),
        Cut(None),
        Pause(300.0),
        Written(" ", " "),
        Cut(None),
        Restyle(Style(1.25, 1.0)),
        Written("Go", "Go"),
        Cut(None),
        Restyle(Style(1.0, 1.0)),
        Written("Now", "Now"),
        Cut(SegmentEnd.SENTENCE),
    ]


def test_a_say_is_buffered_as_one_word_and_kept_as_an_override() -> None:
    markup = Markup(SSML, Normalizer())
    steps = markup.feed('Call <sub alias="World Wide Web">the web.</sub> now')
    assert steps == [
        Written("Call ", "Call "),
        Written("the web.", "thexwebx"),  # as long as the text, with no cut inside
        Written(" now", " now"),
    ]
    assert markup.overrides(0, 17) == (Override(5, 13, "World Wide Web"),)
    assert markup.overrides(5, 17) == (Override(0, 8, "World Wide Web"),)
    assert markup.overrides(0, 10) == ()  # only part of it: spoken as written


def test_a_say_that_cannot_be_read_refuses_its_chunk_and_keeps_the_reader() -> None:
    markup = Markup(SSML, Normalizer())
    assert markup.feed("<speak>One ") == [Written("One ", "One ")]
    with pytest.raises(SsmlError, match="of the written text"):
        markup.feed('<say-as interpret-as="date">soon</say-as>')
    # Nothing of the refused chunk was taken: the document goes on where it was.
    assert markup.feed('<say-as interpret-as="digits">42</say-as></speak>') == [Written("42", "42")]
    assert markup.end() == []
    assert markup.overrides(0, 6) == (Override(4, 6, "four two"),)


# -- through a session ---------------------------------------------------------------------------


def test_a_document_is_cut_where_its_markup_says_and_timed_on_its_written_text(
    registry: VoiceRegistry,
) -> None:
    _, outputs = _spoken(registry, [DOCUMENT])
    assert not _errors(outputs)
    assert isinstance(outputs[-1], DoneOut)
    pieces = _pieces(outputs)
    assert "Sure thing!" in pieces[0]
    assert any("eigh B one two" in p for p in pieces)
    assert any("United Nations" in p and "March fifth, twenty twenty-four" in p for p in pieces)
    assert "this part is slow" in pieces  # a piece of its own: its rate and volume differ
    assert any("[[ təmˈeɪtˌoʊ ]]" in p for p in pieces)
    words = _words(outputs)
    written = [WRITTEN[w.char_start : w.char_end].strip("!.,") for w in words]
    # Every written word once, in order; each markup word is one word over all its sound.
    assert written == [
        "Sure", "thing", "Your", "code", "is", "AB-12", "The", "UN", "met", "on", "3/5/2024",
        "and", "this", "part", "is", "slow", "but", "tomato", "is", "not",
    ]  # fmt: skip
    starts = [w.start_ms for w in words]
    assert starts == sorted(starts)
    code = words[written.index("AB-12")]
    assert code.end_ms - code.start_ms > 4 * (words[3].end_ms - words[3].start_ms) / 2


def test_a_break_is_the_pause_between_the_words_around_it(registry: VoiceRegistry) -> None:
    def gap(document: str) -> float:
        _, outputs = _spoken(registry, [document])
        first, second = _words(outputs)
        return second.start_ms - first.end_ms

    plain = gap("Hello world")
    assert gap('Hello<break time="1200ms"/> world') == pytest.approx(1200.0, abs=30.0)
    assert gap('Hello. <break time="100ms"/>World.') == pytest.approx(100.0, abs=30.0)
    assert gap('Hello<break time="1s"/><break time="500ms"/> world') == pytest.approx(1500, abs=30)
    assert plain < 100.0


def test_a_break_before_the_first_word_is_silence_first(registry: VoiceRegistry) -> None:
    _, outputs = _spoken(registry, ['<break time="800ms"/>Hello'])
    [word] = _words(outputs)
    assert word.start_ms == pytest.approx(800.0, abs=30.0)


def _played(
    registry: VoiceRegistry, first: str
) -> tuple[Session, InstantRuntime, list[Output], float]:
    """A session that was sent ``first`` at time 0 (flushed when it ends a sentence), what it
    gave, and how long that audio plays (s): the listener runs out of audio then."""
    session = _session(registry)
    session.start("a", StartOptions(markup=SSML), 0.0)
    session.text("a", first, 0.0)
    if first.endswith("."):
        session.flush("a", 0.0)
    runtime = InstantRuntime(session)
    before = runtime.serve(0.0)
    played_s = sum(len(o.data) for o in before if isinstance(o, AudioOut)) / 2 / RATE
    return session, runtime, before, played_s


@pytest.mark.parametrize(
    ("first", "then"),
    [
        ('Hello.<break time="1s"/>', "World."),  # the break came before the audio ran out
        ("Hello.", '<break time="1s"/>World.'),  # it came after
    ],
)
@pytest.mark.parametrize("heard_s", [0.3, 0.7])
def test_silence_the_listener_heard_counts_towards_a_break(
    registry: VoiceRegistry, first: str, then: str, heard_s: float
) -> None:
    # The text after the break comes only once the listener has played everything: what is
    # left of the break is put before it, so that the listener hears the whole second.
    session, runtime, before, played_s = _played(registry, first)
    later = played_s + heard_s
    session.text("a", then, later)
    session.end("a", later)
    after = runtime.serve(later)
    [hello] = _words(before)
    [world] = _words(after)
    left_ms = 1000.0 - heard_s * 1000.0
    # Its words are timed on the audio, which starts again at once: the pause in it is what is
    # left of the break (the margins the joiner keeps round speech aside).
    assert world.start_ms - played_s * 1000.0 == pytest.approx(left_ms, abs=30.0)
    assert hello.end_ms < played_s * 1000.0


def test_the_silence_is_counted_until_the_piece_after_the_break_is_made(
    registry: VoiceRegistry,
) -> None:
    # "World" waits in the buffer after it came: the listener goes on hearing silence until
    # the end of the text makes its piece.
    session, runtime, _, played_s = _played(registry, 'Hello.<break time="1s"/>')
    session.text("a", "World", played_s + 0.1)
    assert runtime.serve(played_s + 0.1) == []
    session.end("a", played_s + 0.6)
    [world] = _words(runtime.serve(played_s + 0.6))
    assert world.start_ms - played_s * 1000.0 == pytest.approx(400.0, abs=30.0)


def test_a_break_the_listener_already_heard_in_silence_adds_none(registry: VoiceRegistry) -> None:
    session, runtime, _, played_s = _played(registry, 'Hello.<break time="300ms"/>')
    session.text("a", "World.", played_s + 2.0)
    session.end("a", played_s + 2.0)
    [world] = _words(runtime.serve(played_s + 2.0))
    assert world.start_ms - played_s * 1000.0 < 30.0


def test_prosody_sets_each_pieces_speed_and_gain(registry: VoiceRegistry) -> None:
    session = _session(registry)
    session.start("a", StartOptions(markup=SSML, volume=0.5), 0.0)
    session.text("a", 'One <prosody rate="50%" volume="x-loud">two</prosody> three.', 0.0)
    session.end("a", 0.0)
    submits = [o.request for o in session.drain() if isinstance(o, SubmitSegment)]
    assert [(r.text, r.settings.speed) for r in submits] == [
        ("One", 1.0),
        ("two", 0.5),
        ("three.", 1.0),
    ]
    _, outputs = _spoken(registry, ['One <prosody volume="x-loud">two</prosody> three.'])
    audio = _audio(outputs)
    words = _words(outputs)

    def peak(word: WordTiming) -> float:
        lo, hi = int(word.start_ms * RATE / 1000), int(word.end_ms * RATE / 1000)
        return float(np.abs(audio[lo:hi]).max())

    assert peak(words[1]) == pytest.approx(2.5 * peak(words[0]), rel=0.05)
    assert peak(words[2]) == pytest.approx(peak(words[0]), rel=0.05)
    # Click-free: the seams add no step between two samples larger than the stand-in voice's
    # own (its words start abruptly), at the loud piece's gain.
    _, plain = _spoken(registry, ["One two three."])
    own_step = float(np.abs(np.diff(_audio(plain))).max())
    assert float(np.abs(np.diff(audio)).max()) <= 2.5 * own_step + 1e-3


def test_the_delivery_changes_mid_context_for_the_text_that_follows(
    registry: VoiceRegistry,
) -> None:
    session = _session(registry)
    session.start("a", StartOptions(), 0.0)
    session.text("a", "Slow down here ", 0.0)
    session.delivery("a", 0.0, speed=0.8, volume=2.0, sentence_pause_ms=600.0)
    session.text("a", "and then. Go on.", 0.0)
    session.end("a", 0.0)
    submits = [o.request for o in session.drain() if isinstance(o, SubmitSegment)]
    # A pause after a sentence of its own: each sentence is a piece from then on.
    assert [(r.text, r.settings.speed) for r in submits] == [
        ("Slow down here", 1.0),
        ("and then.", 0.8),
        ("Go on.", 0.8),
    ]
    session.delivery("a", 0.0, volume=9.0)
    [error] = _errors(session.drain())
    assert error.code == "context_ending"


def test_a_context_sets_its_pause_after_a_sentence(registry: VoiceRegistry) -> None:
    def gap(pause_ms: float | None) -> float:
        session = _session(registry)
        session.start("a", StartOptions(sentence_pause_ms=pause_ms), 0.0)
        session.text("a", "Hello.", 0.0)
        session.flush("a", 0.0)
        session.text("a", "World.", 0.0)
        session.end("a", 0.0)
        words = _words(InstantRuntime(session).serve(0.0))
        return words[1].start_ms - words[0].end_ms

    assert gap(900.0) == pytest.approx(900.0, abs=30.0)
    assert gap(None) < 400.0


def test_a_pause_after_a_sentence_makes_every_sentence_a_piece(registry: VoiceRegistry) -> None:
    session = _session(registry)
    session.start("a", StartOptions(sentence_pause_ms=700.0), 0.0)
    session.text("a", "Hi. Yes. Short ones. ", 0.0)
    session.delivery("a", 0.0, sentence_pause_ms=500.0)  # the same rule from here on
    session.text("a", "More. Here.", 0.0)
    session.end("a", 0.0)
    outputs = InstantRuntime(session).serve(0.0)
    assert _pieces(outputs) == ["Hi.", "Yes.", "Short ones.", "More.", "Here."]
    words = _words(outputs)
    gaps = [b.start_ms - a.end_ms for a, b in itertools.pairwise(words)]
    assert gaps[:2] == [pytest.approx(700.0, abs=30.0)] * 2
    assert gaps[-1] == pytest.approx(500.0, abs=30.0)


def test_bad_markup_is_refused_with_a_clear_error_and_loses_nothing(
    registry: VoiceRegistry,
) -> None:
    session = _session(registry)
    session.start("a", StartOptions(markup=SSML), 0.0)
    session.text("a", "<speak>Before the error. ", 0.0)
    session.text("a", '<break time="forever"/>', 0.0)
    [error] = _errors(session.drain())
    assert error.code == "invalid_ssml" and "break time 'forever'" in error.message
    session.text("a", "<prosody rate=fast>", 0.0)  # unquoted: not XML
    [error] = _errors(session.drain())
    assert error.code == "invalid_ssml" and "malformed tag" in error.message
    session.text("a", "And after it.</speak>", 0.0)
    session.end("a", 0.0)
    outputs = InstantRuntime(session).serve(0.0)
    assert not _errors(outputs) and isinstance(outputs[-1], DoneOut)
    written = "Before the error. And after it."
    assert [written[w.char_start : w.char_end].strip(".") for w in _words(outputs)] == [
        "Before", "the", "error", "And", "after", "it",
    ]  # fmt: skip


def test_an_element_left_open_at_the_end_is_reported_and_the_context_still_ends(
    registry: VoiceRegistry,
) -> None:
    _, outputs = _spoken(registry, ["<speak>Hello <emphasis>there"])
    [error] = _errors(outputs)
    assert error.code == "invalid_ssml" and "<emphasis> is never closed" in error.message
    assert isinstance(outputs[-1], DoneOut)
    assert len(_words(outputs)) == 2


def test_a_whole_text_request_with_bad_markup_is_refused_whole(registry: VoiceRegistry) -> None:
    session = _session(registry)
    session.request("a", StartOptions(markup=SSML), "Hello <sub>x</sub>", 0.0)
    outputs = session.drain()
    assert [e.code for e in _errors(outputs)] == ["invalid_ssml"]
    assert not _pieces(outputs) and session.open_contexts == 0


def test_without_markup_tags_are_plain_text(registry: VoiceRegistry) -> None:
    _, outputs = _spoken(registry, ['Say <break time="1s"/> it'], dialect=None)
    assert any("break" in p for p in _pieces(outputs))


def test_cartesia_tags_in_plain_text(registry: VoiceRegistry) -> None:
    session = _session(registry)
    session.start("a", StartOptions(markup=CARTESIA_TAGS), 0.0)
    session.text("a", 'AT&T <speed ratio="1.5"/>is <spell>ab1</spell> & x < 5', 0.0)
    session.end("a", 0.0)
    outputs = InstantRuntime(session).serve(0.0)
    assert not _errors(outputs)
    submits = [o.request for o in outputs if isinstance(o, SubmitSegment)]
    assert submits[0].text == "eigh T and T" and submits[0].settings.speed == 1.0
    assert "eigh b one" in submits[1].text and submits[1].settings.speed == 1.5


# -- any split reads as the whole ----------------------------------------------------------------


def _result(
    registry: VoiceRegistry, chunks: list[str]
) -> tuple[list[str], list[WordTiming], bytes]:
    _, outputs = _spoken(registry, chunks)
    assert not _errors(outputs)
    data = b"".join(o.data for o in outputs if isinstance(o, AudioOut))
    return _pieces(outputs), _words(outputs), data


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(cuts=st.lists(st.integers(min_value=1, max_value=len(DOCUMENT) - 1), max_size=25))
def test_any_split_gives_the_same_audio_and_timings(
    registry: VoiceRegistry, cuts: list[int]
) -> None:
    points = [0, *sorted(set(cuts)), len(DOCUMENT)]
    chunks = [DOCUMENT[a:b] for a, b in itertools.pairwise(points)]
    assert _result(registry, chunks) == _result(registry, [DOCUMENT])


def test_every_two_way_split_gives_the_same_timings(registry: VoiceRegistry) -> None:
    whole = _result(registry, [DOCUMENT])
    for cut in range(1, len(DOCUMENT), 3):
        assert _result(registry, [DOCUMENT[:cut], DOCUMENT[cut:]]) == whole, cut


# -- bad markup of any kind, in any chunks: an error each time, never a crash ---------------------

FRAGMENTS = [
    "Hello there. ",
    "AT&T ",
    "&amp; ",
    "&bogus; ",
    "< ",
    "<",
    ">",
    "<speak>",
    "</speak>",
    "<p>",
    "</s>",
    '<break time="300ms"/>',
    '<break time="forever"/>',
    '<break time="99s"/>',
    '<prosody rate="fast">',
    "</prosody>",
    '<prosody volume="loud"',
    '<sub alias="United Nations">UN</sub>',
    "<sub>x</sub>",
    '<say-as interpret-as="date">soon</say-as>',
    '<say-as interpret-as="telephone">555-0100</say-as>',
    '<phoneme alphabet="cmu-arpabet" ph="ZZ9">x</phoneme>',
    '<phoneme ph="həˈloʊ">hello</phoneme>',
    "<!-- a comment",
    " -->",
    "\x00",
    "🙂 ",
]


@settings(max_examples=150, deadline=None, derandomize=True, database=None)
@given(
    parts=st.lists(st.sampled_from(FRAGMENTS), min_size=1, max_size=12),
    cuts=st.lists(st.integers(0, 300), max_size=8),
    dialect=st.sampled_from([SSML, CARTESIA_TAGS]),
)
def test_bad_markup_in_any_chunks_is_an_error_never_a_crash(
    parts: list[str], cuts: list[int], dialect: SsmlDialect
) -> None:
    registry = VoiceRegistry(None)
    document = "".join(parts)
    points = [0, *sorted({min(c, len(document)) for c in cuts}), len(document)]
    session = _session(registry)
    session.start("a", StartOptions(markup=dialect), 0.0)
    for start, end in itertools.pairwise(points):
        session.text("a", document[start:end], 0.0)
    session.end("a", 0.0)
    outputs = InstantRuntime(session).serve(0.0)
    assert {e.code for e in _errors(outputs)} <= {"invalid_ssml"}
    assert all("at character" in e.message for e in _errors(outputs))
    assert isinstance(outputs[-1], DoneOut)
    written = session.written_text("a")
    assert written is None  # done: the context is gone
