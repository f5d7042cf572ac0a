"""Encoding off the event loop, the session's part (``voxflow.session.encoding``): the session
hands encoder steps out (``EncodeAudio``) and sends audio only from their results. The steps run
on the connection's lanes (``voxflow.connection.encode_lanes``)."""

from __future__ import annotations

import pytest

from voxflow.engines.base import VoiceSettings
from voxflow.engines.piper import PiperEngine
from voxflow.engines.registry import VoiceRegistry
from voxflow.runtime.jobs import Drained, Prepared, Rendered
from voxflow.session.encoding import EncodeStep
from voxflow.session.events import (
    AudioOut,
    CancelledOut,
    CancelStream,
    DoneOut,
    EncodeAudio,
    ErrorOut,
    Output,
    SubmitSegment,
    TimestampsOut,
)
from voxflow.session.options import SessionConfig, StartOptions
from voxflow.session.session import Session
from voxflow.text.chunking import ChunkingConfig


def _rendered_session(engine: PiperEngine, output_format: str) -> tuple[Session, list[Output]]:
    """A session whose one segment is rendered whole and drained; its outputs since then."""
    config = SessionConfig(default_voice="joe", chunking=ChunkingConfig(lead_cost=None))
    session = Session(config, VoiceRegistry().get)
    session.start("a", StartOptions(output_format=output_format, settings=VoiceSettings(seed=1)), 0)
    session.text("a", "Good morning, everyone.", 0.1)
    session.end("a", 0.1)
    (submit,) = [o for o in session.drain() if isinstance(o, SubmitSegment)]
    utterance = engine.prepare(submit.request.text, "joe", submit.request.settings)
    session.synthesis_event(submit.serial, Prepared(0, utterance, 0.01), 0.2)
    audio = engine.render(utterance, 0, utterance.num_frames)
    last = Rendered(0, 0, utterance.num_frames, audio, True, 0.01, 0.0, True)
    session.synthesis_event(submit.serial, last, 0.3)
    session.synthesis_event(submit.serial, Drained(), 0.4)
    return session, session.drain()


@pytest.mark.parametrize("output_format", ["pcm_24000", "mp3_44100_128"])
def test_the_session_sends_audio_only_from_encoder_results(
    engine: PiperEngine, output_format: str
) -> None:
    session, outputs = _rendered_session(engine, output_format)
    # Rendering and the end of the stream output encoder steps, never audio or done.
    assert not [o for o in outputs if isinstance(o, AudioOut | TimestampsOut | DoneOut)]
    steps = [o for o in outputs if isinstance(o, EncodeAudio)]
    assert [s.job.step for s in steps] == [EncodeStep.AUDIO, EncodeStep.DRAIN, EncodeStep.FINISH]
    # Until the last step's result is back, the context is open and takes no more text.
    session.text("a", "More?", 0.5)
    (error,) = [o for o in session.drain() if isinstance(o, ErrorOut)]
    assert error.code == "context_ending"
    assert session.open_contexts == 1

    events: list[Output] = []
    for step in steps:
        session.encoded(step.serial, step.job.run(), 0.6)
        events.extend(session.drain())
    kinds = [type(e) for e in events]
    assert kinds[0] is TimestampsOut and kinds[-1] is DoneOut
    audio = [e for e in events if isinstance(e, AudioOut)]
    assert audio and all(a.data for a in audio)
    assert [a.seq for a in audio] == list(range(len(audio)))
    (done,) = [e for e in events if isinstance(e, DoneOut)]
    assert done.metrics.ttfa_ms == pytest.approx(500.0)  # first text 0.1 s, first bytes 0.6 s
    assert session.open_contexts == 0


def test_mp3_word_times_include_the_codec_priming(engine: PiperEngine) -> None:
    def first_word_start(output_format: str) -> float:
        session, outputs = _rendered_session(engine, output_format)
        for step in (o for o in outputs if isinstance(o, EncodeAudio)):
            session.encoded(step.serial, step.job.run(), 0.6)
        words = [w for o in session.drain() if isinstance(o, TimestampsOut) for w in o.words]
        return words[0].start_ms

    # MP3 decoders play the encoder's priming before the speech: the words move with it.
    assert first_word_start("mp3_44100_128") > first_word_start("pcm_44100") + 10.0


def test_results_after_a_cancel_are_dropped(engine: PiperEngine) -> None:
    session, outputs = _rendered_session(engine, "pcm_24000")
    steps = [o for o in outputs if isinstance(o, EncodeAudio)]
    session.cancel("a", None, 0.5, 0.5)
    cancelled = session.drain()
    assert [type(o) for o in cancelled] == [CancelStream, CancelledOut]
    assert isinstance(cancelled[1], CancelledOut) and cancelled[1].played_ms == 0.0
    for step in steps:
        session.encoded(step.serial, step.job.run(), 0.6)
    assert session.drain() == []


def test_a_failed_encoder_step_fails_its_context_only(engine: PiperEngine) -> None:
    session, outputs = _rendered_session(engine, "pcm_24000")
    serial = next(o.serial for o in outputs if isinstance(o, EncodeAudio))
    session.encode_failed(serial, "codec exploded")
    failed = session.drain()
    assert isinstance(failed[0], CancelStream)
    assert isinstance(failed[1], ErrorOut) and failed[1].code == "encoding_failed"
    assert "codec exploded" in failed[1].message
    assert session.open_contexts == 0
    session.start("a", StartOptions(), 1.0)  # the id is free again
    assert not [o for o in session.drain() if isinstance(o, ErrorOut)]
