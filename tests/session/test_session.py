from __future__ import annotations

import itertools

import numpy as np
import pytest

from tests.support.instant_runtime import InstantRuntime
from voxflow.connection.local import drain_encoded
from voxflow.engines.base import Utterance, VoiceSettings
from voxflow.engines.piper import PiperEngine
from voxflow.engines.registry import VoiceRegistry
from voxflow.runtime.handover import choose_switch
from voxflow.runtime.jobs import Drained, Failed, Prepared, Rendered
from voxflow.session.events import (
    AudioOut,
    CancelledOut,
    CancelStream,
    CloseStream,
    DoneOut,
    ErrorOut,
    OpenStream,
    Output,
    SubmitSegment,
    TimestampsOut,
)
from voxflow.session.options import SessionConfig, StartOptions
from voxflow.session.session import Session
from voxflow.text.chunking import ChunkingConfig
from voxflow.text.lexicon import Lexicon, LexiconEntry
from voxflow.text.normalize.normalizer import NormalizationMode


def _session(**overrides: object) -> Session:
    # Segments as the schedule cuts them, without the early first cut (leads are exercised with
    # the real scheduler in tests/session/test_session_takeover.py).
    overrides.setdefault("chunking", ChunkingConfig(lead_cost=None))
    config = SessionConfig(default_voice="joe", **overrides)  # type: ignore[arg-type]
    return Session(config, VoiceRegistry().get)


def _drain(session: Session, now: float = 1.0) -> list[Output]:
    """The session's outputs, with its encoder steps run and their results fed back."""
    return list(drain_encoded(session, lambda: now))


def _of(outputs: list[Output], kind: type) -> list:  # type: ignore[type-arg]
    return [o for o in outputs if isinstance(o, kind)]


def _render_all(
    session: Session, engine: PiperEngine, submits: list[SubmitSegment], now: float = 1.0
) -> dict[int, Utterance]:
    """Run each submitted segment through the real engine and feed the results back, as the
    scheduler does when a lead is rendered to its end before its takeover is prepared."""
    utterances = {}
    for submit in submits:
        request = submit.request
        utterance = engine.prepare(request.text, request.voice, request.settings)
        utterances[request.tag] = utterance
        session.synthesis_event(submit.serial, Prepared(request.tag, utterance, 0.01), now)
        start = 0
        if request.takeover is not None:
            lead = utterances[request.takeover.lead_tag]
            start = choose_switch(lead, utterance, request.takeover.points, lead.num_frames).start
        audio = engine.render(utterance, 0, utterance.num_frames)
        half = max(start, utterance.num_frames // 2)
        spf = utterance.samples_per_frame
        session.synthesis_event(
            submit.serial,
            Rendered(
                request.tag, start, half, audio[start * spf : half * spf], False, 0.01, 0.0, True
            ),
            now,
        )
        session.synthesis_event(
            submit.serial,
            Rendered(request.tag, half, utterance.num_frames, audio[half * spf :], True, 0.01, 0.0),
            now,
        )
    return utterances


def test_text_opens_a_default_context_and_submits_segments() -> None:
    session = _session()
    session.text(None, "Hello there, my friend. How are you today? ", 0.0)
    session.text(None, "Fine.", 0.1)
    outputs = _drain(session)
    assert isinstance(outputs[0], OpenStream)
    submits = _of(outputs, SubmitSegment)
    texts = [s.request.text for s in submits]
    assert texts == ["Hello there, my friend.", "How are you today?"][: len(texts)]
    assert texts and texts[0] == "Hello there, my friend."
    assert [s.request.tag for s in submits] == list(range(len(submits)))
    session.end(None, 0.2)
    rest = _drain(session)
    assert [s.request.text for s in _of(rest, SubmitSegment)][-1].endswith("Fine.")
    assert isinstance(rest[-1], CloseStream)


@pytest.mark.parametrize(
    ("options", "code"),
    [
        (StartOptions(voice="nobody"), "unknown_voice"),
        (StartOptions(output_format="mp3_44100_999"), "unsupported_format"),
        (StartOptions(output_format="pcm_1234"), "unsupported_format"),
        (StartOptions(chunk_length_schedule=(0,)), "invalid_message"),
    ],
)
def test_bad_start_options_are_errors_that_open_nothing(options: StartOptions, code: str) -> None:
    session = _session()
    session.start("a", options, 0.0)
    outputs = _drain(session)
    assert len(outputs) == 1 and isinstance(outputs[0], ErrorOut)
    assert outputs[0].code == code and outputs[0].context_id == "a"
    assert session.open_contexts == 0


def test_client_mistakes_leave_the_context_usable() -> None:
    session = _session(max_message_chars=50)
    session.start("a", StartOptions(), 0.0)
    session.text("a", "x" * 51, 0.0)
    session.flush("nope", 0.0)
    session.start("a", StartOptions(), 0.0)
    errors = _of(_drain(session), ErrorOut)
    assert [e.code for e in errors] == ["text_too_long", "unknown_context", "context_exists"]
    session.text("a", "Still works. Yes. ", 0.1)
    session.flush("a", 0.1)
    assert _of(_drain(session), SubmitSegment)
    session.end("a", 0.2)
    session.text("a", "late", 0.3)
    assert [e.code for e in _of(_drain(session), ErrorOut)] == ["context_ending"]


def test_too_many_contexts() -> None:
    session = _session(max_contexts=2)
    for cid in ("a", "b", "c"):
        session.start(cid, StartOptions(), 0.0)
    errors = _of(_drain(session), ErrorOut)
    assert [(e.context_id, e.code, e.retryable) for e in errors] == [
        ("c", "too_many_contexts", True)
    ]


def test_audio_timestamps_and_done(engine: PiperEngine) -> None:
    session = _session()
    session.start("a", StartOptions(output_format="pcm_24000", settings=VoiceSettings(seed=1)), 0)
    session.text("a", "  Good morning, everyone. The meeting starts at noon. ", 0.5)
    session.end("a", 0.6)
    submits = _of(_drain(session), SubmitSegment)
    assert len(submits) == 2
    utterances = _render_all(session, engine, submits)
    session.synthesis_event(submits[0].serial, Drained(), 2.0)
    outputs = _drain(session)

    audio = _of(outputs, AudioOut)
    assert [a.seq for a in audio] == list(range(len(audio)))
    for before, after in itertools.pairwise(audio):
        assert after.offset_ms == pytest.approx(before.offset_ms + before.duration_ms)
    total_samples = sum(len(a.data) // 2 for a in audio)
    assert sum(a.duration_ms for a in audio) == pytest.approx(total_samples / 24)
    source_samples = sum(u.num_samples for u in utterances.values())
    # The seam joiner trims each segment's silences and puts a set pause between them.
    assert 0.6 * source_samples * 24000 / 22050 < total_samples < source_samples * 24000 / 22050

    words = [w for t in _of(outputs, TimestampsOut) for w in t.words]
    text = "  Good morning, everyone. The meeting starts at noon. "
    assert [w.word for w in words] == [
        "Good", "morning", "everyone", "The", "meeting", "starts", "at", "noon",
    ]  # fmt: skip
    for word in words:
        assert text[word.char_start : word.char_end] == word.word
    assert all(a.end_ms <= b.start_ms for a, b in itertools.pairwise(words))
    # A sentence boundary: about the configured 250 ms from speech to speech.
    assert 150 <= words[3].start_ms - words[2].end_ms <= 400
    assert words[-1].end_ms <= total_samples / 24

    (done,) = _of(outputs, DoneOut)
    assert done.metrics.chunks == len(audio)
    assert done.metrics.audio_ms == pytest.approx(1000 * total_samples / 24000)
    assert session.open_contexts == 0


def test_cancel_reports_spoken_text_and_drops_late_audio(engine: PiperEngine) -> None:
    session = _session()
    text = "One two three four five six seven."
    session.start("a", StartOptions(settings=VoiceSettings(seed=2)), 0.0)
    session.text("a", text, 0.0)
    session.flush("a", 0.0)
    (submit,) = _of(_drain(session), SubmitSegment)
    utterance = engine.prepare(submit.request.text, "joe", submit.request.settings)
    session.synthesis_event(submit.serial, Prepared(0, utterance, 0.01), 0.1)
    assert _drain(session) == []  # words are timed once the joiner has placed the speech
    sent_frames = utterance.num_frames // 2 + 20
    audio = engine.render(utterance, 0, sent_frames)
    session.synthesis_event(
        submit.serial, Rendered(0, 0, sent_frames, audio, False, 0.01, 0.0, True), 0.15
    )
    outputs = _drain(session)
    assert isinstance(outputs[0], TimestampsOut) and _of(outputs, AudioOut)
    timestamps = outputs[0].words
    played = timestamps[2].end_ms + 1.0  # "three" fully heard, "four" not yet

    session.cancel("a", played, 0.2, 0.2)
    outputs = _drain(session)
    assert isinstance(outputs[0], CancelStream) and outputs[0].serial == submit.serial
    (cancelled,) = _of(outputs, CancelledOut)
    assert cancelled.spoken_text == "One two three"
    assert cancelled.played_ms == pytest.approx(played)
    # A client cannot have played more than it was sent.
    session.text("b", "Four five.", 0.3)
    session.flush("b", 0.3)
    _drain(session)
    session.cancel("b", 99_999.0, 0.3, 0.3)
    assert _of(_drain(session), CancelledOut)[0].played_ms == 0.0

    late = engine.render(utterance, sent_frames, sent_frames + 20)
    session.synthesis_event(
        submit.serial, Rendered(0, sent_frames, sent_frames + 20, late, False, 0.01, 0.0), 0.3
    )
    assert _drain(session) == []

    # The id is free again and gets a fresh stream.
    session.start("a", StartOptions(), 0.4)
    (reopened,) = _of(_drain(session), OpenStream)
    assert reopened.serial != submit.serial


def test_cancel_without_played_ms_uses_audio_sent_and_unknown_context_errors() -> None:
    session = _session()
    session.text("a", "Nothing rendered yet. ", 0.0)
    session.cancel("a", None, 0.0, 0.0)
    session.cancel("a", None, 0.0, 0.0)
    outputs = _drain(session)
    (cancelled,) = _of(outputs, CancelledOut)
    assert cancelled.spoken_text == "" and cancelled.played_ms == 0.0
    assert [e.code for e in _of(outputs, ErrorOut)] == ["unknown_context"]


def test_failed_segment_is_reported_and_context_still_finishes() -> None:
    session = _session()
    session.text("a", "Hello.", 0.0)
    session.end("a", 0.0)
    (submit,) = _of(_drain(session), SubmitSegment)
    session.synthesis_event(submit.serial, Failed(0, RuntimeError("boom")), 0.1)
    session.synthesis_event(submit.serial, Drained(), 0.1)
    outputs = _drain(session)
    assert [e.code for e in _of(outputs, ErrorOut)] == ["synthesis_failed"]
    assert len(_of(outputs, DoneOut)) == 1


def test_idle_flush_through_poll() -> None:
    session = _session(chunking=ChunkingConfig(idle_flush_s=0.5))
    session.text("a", "no punctuation here", 10.0)
    assert not _of(_drain(session), SubmitSegment)
    assert session.next_deadline() == pytest.approx(10.5)
    session.poll(10.2)
    assert not _of(_drain(session), SubmitSegment)
    session.poll(10.6)
    (submit,) = _of(_drain(session), SubmitSegment)
    assert submit.request.text == "no punctuation here"


def test_close_cancels_every_context() -> None:
    session = _session()
    session.text("a", "One. ", 0.0)
    session.text("b", "Two. ", 0.0)
    _drain(session)
    session.close()
    cancels = _of(_drain(session), CancelStream)
    assert len(cancels) == 2 and session.open_contexts == 0
    assert np.unique([c.serial for c in cancels]).size == 2


@pytest.mark.parametrize("output_format", ["pcm_22050", "pcm_24000", "ulaw_8000"])
def test_text_after_everything_was_rendered_still_gets_audio(
    engine: PiperEngine, output_format: str
) -> None:
    session = _session()
    session.start("a", StartOptions(output_format=output_format), 0.0)
    session.text("a", "First part. ", 0.0)
    session.flush("a", 0.0)
    first = _render_all(session, engine, _of(_drain(session), SubmitSegment))
    before = _of(_drain(session), AudioOut)
    session.text("a", "Second part, after a pause.", 5.0)
    session.end("a", 5.0)
    second = _render_all(session, engine, _of(_drain(session), SubmitSegment))
    after = _of(_drain(session), AudioOut)
    assert before and after
    rate = int(output_format.split("_")[1])
    width = 1 if output_format.startswith("ulaw") else 2
    for chunks, utterances in ((before, first), (after, second)):
        samples = sum(len(a.data) for a in chunks) // width
        source = sum(u.num_samples for u in utterances.values())
        # Trimmed silences, but every segment's speech is there.
        assert 0.5 * source * rate / 22050 < samples <= source * rate / 22050 + 2
    assert [a.seq for a in before + after] == list(range(len(before) + len(after)))


def test_segments_are_normalized_and_words_map_back_to_the_written_text(
    engine: PiperEngine,
) -> None:
    session = _session()
    text = "It costs $3.50 at 3:30 p.m. today."
    session.start("a", StartOptions(settings=VoiceSettings(seed=5)), 0.0)
    session.text("a", text, 0.0)
    session.end("a", 0.0)
    submits = _of(_drain(session), SubmitSegment)
    spoken = " ".join(s.request.text for s in submits)
    assert "three dollars and fifty cents" in spoken and "$" not in spoken
    _render_all(session, engine, submits)
    words = [w for t in _of(_drain(session), TimestampsOut) for w in t.words]
    assert [w.word for w in words] == ["It", "costs", "$3.50", "at", "3:30", "p.m.", "today"]
    for word in words:
        assert text[word.char_start : word.char_end] == word.word
    money = words[2]
    # Five spoken words, one written token: its time spans all of them.
    assert money.end_ms - money.start_ms > 3 * (words[1].end_ms - words[1].start_ms)


def test_normalization_off_and_a_request_lexicon() -> None:
    session = _session()
    session.start("off", StartOptions(normalization=NormalizationMode.OFF), 0.0)
    session.text("off", "Pay $5 now.", 0.0)
    session.flush("off", 0.0)
    lexicon = Lexicon([LexiconEntry("voxflow", respelling="vox flow")])
    session.start("lex", StartOptions(lexicon=lexicon), 0.0)
    session.text("lex", "I like Voxflow a lot.", 0.0)
    session.flush("lex", 0.0)
    texts = [s.request.text for s in _of(_drain(session), SubmitSegment)]
    assert texts == ["Pay $5 now.", "I like vox flow a lot."]


def test_each_chunk_says_how_long_its_context_owed_audio_without_sending_any() -> None:
    # What the metrics count as a quiet gap: silence while the context owed audio, from its
    # audio before or from when its text made audio due, whichever came later.
    session = _session()
    runtime = InstantRuntime(session)
    session.start("a", StartOptions(output_format="pcm_22050"), 0.0)
    session.text("a", "First part. ", 0.0)
    session.flush("a", 0.0)  # owes audio from here
    first = _of(runtime.serve(0.3), AudioOut)
    session.text("a", "Second part, after a pause.", 2.0)
    session.flush("a", 2.0)
    second = _of(runtime.serve(2.5), AudioOut)
    assert first and second
    assert first[0].quiet_s == pytest.approx(0.3)  # its first audio's wait
    assert second[0].quiet_s == pytest.approx(0.5)  # not the 2.2 s since the first part's audio
    assert all(a.quiet_s == 0.0 for a in first[1:] + second[1:])  # sent together
