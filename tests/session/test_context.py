"""A context's picture of its listener (``voxflow.session.context``): when it cuts a lead from the
text that has arrived (``Context.hurry_at``), and until when it speaks for admission
(``Context.busy_until``); and the context's map from the text layer's ``SegmentEnd`` to the seam
joiner's ``JoinKind`` (``join_kind``).

The runtime's part is played here by hand: each request is prepared by the simulation's stand-in
engine (``tests.support.simulation.SimEngine``), its windows rendered from it, and the encoder
steps run at once, their results fed back at a given time, as a driver does.
"""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from tests.support.simulation import SimEngine
from voxflow.audio.seam_settings import JoinKind, SeamSettings
from voxflow.connection.local import drain_encoded
from voxflow.engines.base import Utterance
from voxflow.engines.registry import VoiceRegistry
from voxflow.runtime.jobs import Prepared, Rendered, SegmentRequest
from voxflow.session.context import OPEN_GRACE_S, Context, join_kind
from voxflow.session.events import AudioOut, OpenStream, Output, SubmitSegment
from voxflow.session.options import SessionConfig, StartOptions, context_options
from voxflow.session.session import Session
from voxflow.text.chunking import SegmentEnd

ENGINE = SimEngine()
MARGIN_S = 0.35
OPENER = "Sure thing!"
# The next sentence: its first words have arrived while the opener plays.
ARRIVED = " The refund went back to your"
REST = " card. It usually shows up within a few days. Is there"


@pytest.fixture(scope="module")
def registry() -> VoiceRegistry:
    return VoiceRegistry(None)


def _config(hurry_margin_s: float | None = MARGIN_S) -> SessionConfig:
    return SessionConfig(
        default_voice="joe", default_format="pcm_22050", hurry_margin_s=hurry_margin_s
    )


def _context(
    registry: VoiceRegistry, now: float = 0.0, hurry_margin_s: float | None = MARGIN_S
) -> Context:
    options = context_options(_config(hurry_margin_s), StartOptions(), registry.get)
    return Context("a", 1, options, now)


def _prepare(context: Context, request: SegmentRequest) -> Utterance:
    utterance = ENGINE.utterance(request.text)
    context.prepared(Prepared(request.tag, utterance, 0.01))
    return utterance


def _render(
    context: Context, request: SegmentRequest, utterance: Utterance, frames: range, now: float
) -> list[AudioOut]:
    """Render ``frames`` of the prepared ``request``, encode them and send them at ``now``."""
    start, stop = frames.start, frames.stop
    audio = ENGINE.render(utterance, start, stop)
    event = Rendered(
        request.tag,
        start,
        stop,
        audio,
        last=stop >= utterance.num_frames,
        compute_s=0.01,
        late_s=0.0,
        first=start == 0,
    )
    sent: list[AudioOut] = []
    for job in context.rendered(event):
        events, _ = context.encoded(job.run(), now)
        sent.extend(e for e in events if isinstance(e, AudioOut))
    return sent


def _speak_opener(context: Context, now: float) -> None:
    """The opener is submitted, prepared, rendered whole and sent at ``now``; the start of the
    next sentence is buffered."""
    [opener] = context.add_text(OPENER + ARRIVED, now)
    assert opener.text == OPENER
    utterance = _prepare(context, opener)
    assert _render(context, opener, utterance, range(utterance.num_frames), now)
    assert context.idle and context.buffer.buffered == ARRIVED


# -- hurry_at -------------------------------------------------------------------------------------


def test_no_hurry_before_any_audio_was_sent(registry: VoiceRegistry) -> None:
    context = _context(registry)
    [opener] = context.add_text(OPENER + ARRIVED, 0.0)
    assert context.buffer.can_hurry
    assert context.hurry_at() is None  # its piece is not prepared
    _prepare(context, opener)
    assert context.hurry_at() is None  # the listener has heard nothing: no clock to run out
    assert context.next_deadline() is None


def test_the_hurry_comes_the_margin_before_the_listener_runs_out(registry: VoiceRegistry) -> None:
    context = _context(registry)
    _speak_opener(context, 2.0)
    runs_out = context.listener.runs_out_at()
    assert runs_out is not None and runs_out > 2.0
    assert context.hurry_at() == pytest.approx(runs_out - MARGIN_S)
    assert context.next_deadline() == context.hurry_at()


def test_the_audio_a_prepared_piece_holds_puts_the_hurry_off(registry: VoiceRegistry) -> None:
    context = _context(registry)
    _speak_opener(context, 2.0)
    runs_out = context.listener.runs_out_at()
    assert runs_out is not None
    # With no hurry, the sentence and the next short one form a segment (60 characters at least).
    [piece] = context.add_text(REST, 2.1)
    assert piece.text.endswith("within a few days.") and not piece.lead
    assert context.buffer.buffered.strip() == "Is there"
    assert context.hurry_at() is None  # how much audio the piece holds is not known yet
    utterance = _prepare(context, piece)
    # Up to its last word's end: the silence after it is trimmed at the seam.
    spoken_to = utterance.words[-1].end_frame
    assert spoken_to < utterance.num_frames
    held_s = spoken_to * utterance.samples_per_frame / utterance.sample_rate
    assert context.hurry_at() == pytest.approx(runs_out + held_s - MARGIN_S)
    # Half of it sent in the same run: the listener has more in hand, the piece holds less.
    half = utterance.num_frames // 2
    _render(context, piece, utterance, range(half), 2.1)
    later = context.listener.runs_out_at()
    assert later is not None and later > runs_out
    left_s = (spoken_to - half) * utterance.samples_per_frame / utterance.sample_rate
    assert context.hurry_at() == pytest.approx(later + left_s - MARGIN_S)


def test_no_hurry_while_a_lead_waits_for_its_takeover(registry: VoiceRegistry) -> None:
    context = _context(registry)
    _speak_opener(context, 2.0)
    hurry = context.hurry_at()
    assert hurry is not None
    [lead] = context.poll(hurry)
    assert lead.lead and lead.text == "The refund went back"
    assert lead.lookahead == ""  # its takeover says the sentence whole: nothing to read on
    _prepare(context, lead)
    assert context.hurry_at() is None  # the rest of its sentence is arriving
    assert context.add_text(" card and then some more words", 2.1) == []
    assert context.buffer.has_content and context.hurry_at() is None
    [takeover] = context.add_text(" that go on. Is there", 2.2)
    assert takeover.takeover is not None and takeover.takeover.lead_tag == lead.tag
    _prepare(context, takeover)
    # The sentence is whole: the next one may be hurried, once the takeover's audio runs low.
    assert context.hurry_at() is not None


def test_without_takeovers_the_rest_of_a_leads_sentence_is_hurried_too(
    registry: VoiceRegistry,
) -> None:
    # Kokoro's contexts say the rest of a lead's sentence as a piece of its own: an LLM that
    # pauses in it must not leave the listener with nothing until the sentence ends.
    options = replace(context_options(_config(), StartOptions(), registry.get), takeovers=False)
    context = Context("a", 1, options, 0.0)
    _speak_opener(context, 2.0)
    hurry = context.hurry_at()
    assert hurry is not None
    [lead] = context.poll(hurry)
    assert lead.text == "The refund went back" and lead.takeover is None
    # Said as it is, it reads on into the next word that has arrived whole ("your" has not).
    assert lead.lookahead == " to"
    utterance = _prepare(context, lead)
    _render(context, lead, utterance, range(utterance.num_frames), hurry)
    assert context.add_text(" card and then some more words", hurry + 0.1) == []
    # The LLM pauses here: the arrived words are cut before the listener runs out.
    again = context.hurry_at()
    assert again is not None and again > hurry
    [rest] = context.poll(again)
    assert rest.text == "to your card and then some more" and rest.takeover is None
    runs_out = context.listener.runs_out_at()
    assert runs_out is not None and again < runs_out


def test_no_hurry_with_nothing_buffered(registry: VoiceRegistry) -> None:
    context = _context(registry)
    context.add_text(OPENER + " ", 0.0)
    [opener] = context.poll(1.0)  # the look-ahead: the opener alone
    utterance = _prepare(context, opener)
    _render(context, opener, utterance, range(utterance.num_frames), 1.0)
    assert context.listener.runs_out_at() is not None
    assert not context.buffer.has_content
    assert context.hurry_at() is None
    context.add_text("The refund", 1.1)
    assert context.hurry_at() is not None


def test_no_hurry_without_a_margin(registry: VoiceRegistry) -> None:
    context = _context(registry, hurry_margin_s=None)
    _speak_opener(context, 2.0)
    assert context.buffer.can_hurry and context.listener.runs_out_at() is not None
    assert context.hurry_at() is None
    assert context.poll(100.0) == []


# -- busy_until -----------------------------------------------------------------------------------


def test_a_context_that_said_nothing_is_busy_for_the_open_grace(registry: VoiceRegistry) -> None:
    context = _context(registry, now=3.0)
    assert context.busy_until() == 3.0 + OPEN_GRACE_S
    context.add_text("   ", 3.1)  # nothing to say in it
    assert context.busy_until() == 3.0 + OPEN_GRACE_S


def test_a_context_is_busy_for_ever_while_text_or_pieces_wait(registry: VoiceRegistry) -> None:
    context = _context(registry)
    context.add_text("The refund went", 0.0)
    assert context.busy_until() == math.inf  # text buffered
    [piece] = context.flush(0.0)
    assert not context.buffer.has_content
    assert context.busy_until() == math.inf  # a piece in flight
    utterance = _prepare(context, piece)
    assert context.busy_until() == math.inf
    # Its last window rendered, but its encoder steps not back yet.
    audio = ENGINE.render(utterance, 0, utterance.num_frames)
    jobs = context.rendered(
        Rendered(piece.tag, 0, utterance.num_frames, audio, True, 0.01, 0.0, first=True)
    )
    assert context.idle and context.busy_until() == math.inf
    for job in jobs:
        context.encoded(job.run(), 1.0)
    runs_out = context.listener.runs_out_at()
    assert runs_out is not None and runs_out > 1.0
    assert context.busy_until() == runs_out  # all sent: until the listener has heard it


# -- through the session --------------------------------------------------------------------------


def _drain(session: Session, now: float) -> list[Output]:
    return list(drain_encoded(session, lambda: now))


def _submits(outputs: list[Output]) -> list[SegmentRequest]:
    return [o.request for o in outputs if isinstance(o, SubmitSegment)]


def _answer(session: Session, serial: int, request: SegmentRequest, now: float) -> None:
    """Prepare ``request`` and render it whole, as the scheduler would."""
    utterance = ENGINE.utterance(request.text)
    session.synthesis_event(serial, Prepared(request.tag, utterance, 0.01), now)
    audio = ENGINE.render(utterance, 0, utterance.num_frames)
    window = Rendered(request.tag, 0, utterance.num_frames, audio, True, 0.01, 0.0, first=True)
    session.synthesis_event(serial, window, now)


def test_a_poll_at_the_deadline_cuts_a_lead_mid_turn_and_the_sentence_takes_over(
    registry: VoiceRegistry,
) -> None:
    session = Session(_config(), registry.get)
    session.text("a", OPENER + ARRIVED, 0.0)
    outputs = _drain(session, 0.0)
    [opened] = [o for o in outputs if isinstance(o, OpenStream)]
    [opener] = _submits(outputs)
    assert opener.text == OPENER and not opener.lead
    assert session.next_deadline() is None  # nothing heard yet
    _answer(session, opened.serial, opener, 0.5)
    assert any(isinstance(o, AudioOut) for o in _drain(session, 0.5))
    deadline = session.next_deadline()
    assert deadline is not None and deadline > 0.5
    session.poll(deadline - 0.01)
    assert _submits(_drain(session, deadline - 0.01)) == []  # not due yet
    session.poll(deadline)
    [lead] = _submits(_drain(session, deadline))
    assert lead.lead and lead.takeover is None
    assert lead.text == "The refund went back"
    assert session.next_deadline() is None  # a lead is out: no second hurry
    session.text("a", REST, deadline + 0.05)
    [takeover] = _submits(_drain(session, deadline + 0.05))
    # The whole sentence, rendered beside the lead and taking over from it.
    assert takeover.text == "The refund went back to your card."
    assert takeover.takeover is not None and takeover.takeover.lead_tag == lead.tag
    assert not takeover.lead


# -- join_kind ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("boundary", "expected"),
    [
        (None, None),
        (SegmentEnd.CUT, JoinKind.WORD),  # a hard cut inside a word gets a word's (no) pause
        (SegmentEnd.WORD, JoinKind.WORD),
        (SegmentEnd.CLAUSE, JoinKind.CLAUSE),
        (SegmentEnd.SENTENCE, JoinKind.SENTENCE),
        (SegmentEnd.FLUSH, JoinKind.FLUSH),
    ],
)
def test_every_segment_end_maps_to_its_join(
    boundary: SegmentEnd | None, expected: JoinKind | None
) -> None:
    assert join_kind(boundary) is expected


def test_each_segment_end_gets_its_own_pause() -> None:
    # Distinct pauses, so a wrong mapping shows up as a wrong pause, not only as a wrong name.
    settings = SeamSettings(
        sentence_pause_ms=300.0, clause_pause_ms=200.0, word_pause_ms=10.0, flush_pause_ms=400.0
    )
    pauses = {end: settings.pause_ms(join_kind(end)) for end in SegmentEnd}
    assert pauses == {
        SegmentEnd.CUT: 10.0,
        SegmentEnd.WORD: 10.0,
        SegmentEnd.CLAUSE: 200.0,
        SegmentEnd.SENTENCE: 300.0,
        SegmentEnd.FLUSH: 400.0,
    }
    assert settings.pause_ms(join_kind(None)) == 0.0
