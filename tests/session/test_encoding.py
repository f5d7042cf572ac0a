"""Encoding off the event loop: the session hands encoder steps out (``EncodeAudio``) and sends
audio only from their results; ``EncodeLanes`` runs each stream's steps in order on a pool."""

from __future__ import annotations

import asyncio
import threading
import time
import weakref
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from voxflow.audio.encoders import StreamEncoder
from voxflow.audio.formats import parse_output_format
from voxflow.connection.encode_lanes import EncodeLanes
from voxflow.connection.encoder_pool import EncoderPool
from voxflow.engines.base import FloatArray, VoiceSettings
from voxflow.engines.piper import PiperEngine
from voxflow.engines.registry import VoiceRegistry
from voxflow.runtime.jobs import Drained, Prepared, Rendered
from voxflow.session.encoding import Encoded, EncodeJob, EncodeStep
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


# -- EncodeLanes ----------------------------------------------------------------------------------


class _GatedEncoder(StreamEncoder):
    """A real PCM encoder whose ``encode`` waits for a gate (to hold a step while it runs)."""

    def __init__(self, gate: threading.Event) -> None:
        super().__init__(parse_output_format("pcm_22050"), 22050)
        self.gate = gate
        self.threads: set[str] = set()

    def encode(self, chunk: FloatArray) -> bytes:
        self.threads.add(threading.current_thread().name)
        if not self.gate.wait(10):
            raise TimeoutError("gate never opened")
        return super().encode(chunk)


def _tone(samples: int) -> FloatArray:
    return np.full(samples, 0.25, dtype=np.float32)


def test_lanes_run_each_stream_in_order_off_the_loop_and_drop_cancelled_streams() -> None:
    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        delivered: list[tuple[int, int]] = []
        all_done = asyncio.Event()

        def deliver(serial: int, result: Encoded | BaseException) -> None:
            assert isinstance(result, Encoded)
            delivered.append((serial, result.samples))
            if len(delivered) == 4:
                all_done.set()

        gate = threading.Event()
        slow = _GatedEncoder(gate)
        with ThreadPoolExecutor(2, thread_name_prefix="test-encode") as pool:
            lanes = EncodeLanes(loop, pool, deliver)
            for samples in (100, 200, 300):
                lanes.submit(1, EncodeJob(slow, EncodeStep.AUDIO, _tone(samples)))
            fast = StreamEncoder(parse_output_format("pcm_22050"), 22050)
            lanes.submit(2, EncodeJob(fast, EncodeStep.AUDIO, _tone(50)))
            dropped = StreamEncoder(parse_output_format("pcm_22050"), 22050)
            lanes.submit(3, EncodeJob(dropped, EncodeStep.AUDIO, _tone(70)))
            lanes.drop(3)
            # Stream 1 is stuck in its first step, on a pool thread: the loop goes on and
            # stream 2 gets its result meanwhile.
            for _ in range(200):
                if delivered:
                    break
                await asyncio.sleep(0.01)
            assert delivered == [(2, 50)]
            gate.set()
            await asyncio.wait_for(all_done.wait(), 10)
            assert delivered == [(2, 50), (1, 100), (1, 200), (1, 300)]
        assert slow.threads and all(name.startswith("test-encode") for name in slow.threads)
        assert (3, 70) not in delivered
        assert len(lanes) == 0

    asyncio.run(scenario())


def test_lanes_deliver_an_encoder_failure_and_go_on_with_other_streams() -> None:
    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        results: dict[int, Encoded | BaseException] = {}
        both = asyncio.Event()

        def deliver(serial: int, result: Encoded | BaseException) -> None:
            results[serial] = result
            if len(results) == 2:
                both.set()

        finished = StreamEncoder(parse_output_format("pcm_22050"), 22050)
        finished.finish()
        ok = StreamEncoder(parse_output_format("pcm_22050"), 22050)
        lanes = EncodeLanes(loop, None, deliver)
        lanes.submit(1, EncodeJob(finished, EncodeStep.AUDIO, _tone(10)))  # encode after finish
        lanes.submit(2, EncodeJob(ok, EncodeStep.AUDIO, _tone(10)))
        await asyncio.wait_for(both.wait(), 10)
        assert isinstance(results[1], RuntimeError)
        assert isinstance(results[2], Encoded) and results[2].samples == 10

    asyncio.run(scenario())


def test_the_encoder_pool_starts_its_threads_at_once_and_stops_them() -> None:
    before = threading.active_count()
    pool = EncoderPool(2, name="test-pool")
    try:
        assert threading.active_count() == before + 2  # no drift with traffic: all start now
        assert pool.submit(lambda x: x * 2, 21).result(10) == 42
        failing = pool.submit(lambda: 1 / 0)
        with pytest.raises(ZeroDivisionError):
            failing.result(10)
        assert threading.active_count() == before + 2
    finally:
        pool.shutdown(wait=True)
    assert threading.active_count() == before
    with pytest.raises(RuntimeError, match="shut down"):
        pool.submit(lambda: None)


def test_an_idle_pool_thread_keeps_nothing_of_its_last_job() -> None:
    # A slow reader's last chunks (hundreds of kilobytes of audio) stayed alive in the idle
    # threads' frames until the next job came (docs/reliability.md, the slow readers).
    class Chunk:
        pass

    pool = EncoderPool(1, name="test-pool")
    try:
        future = pool.submit(Chunk)
        made = weakref.ref(future.result(10))
        del future
        deadline = time.monotonic() + 10
        while made() is not None and time.monotonic() < deadline:
            time.sleep(0.01)  # the thread drops its last job once it is back waiting for work
        assert made() is None
    finally:
        pool.shutdown(wait=True)
