"""``EncodeLanes`` (``voxflow.connection.encode_lanes``): each stream's encoder steps run in order
on a pool, off the event loop; a dropped stream's steps are not run, a failed step is delivered."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from voxflow.audio.encoders import StreamEncoder
from voxflow.audio.formats import parse_output_format
from voxflow.connection.encode_lanes import EncodeLanes
from voxflow.engines.base import FloatArray
from voxflow.session.encoding import Encoded, EncodeJob, EncodeStep


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
