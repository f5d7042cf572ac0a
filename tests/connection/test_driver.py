"""The driver's outbox: client events bounded in bytes, as they go on the wire; a full outbox
holds the connection's rendering, a far fuller one is a client that does not read."""

from __future__ import annotations

import asyncio

from voxflow.connection.driver import STALL_FACTOR, Outbox, wire_bytes
from voxflow.session.events import AudioOut, CancelledOut, TimestampsOut, WordTiming


def _audio(context: str, size: int) -> AudioOut:
    return AudioOut(context, 0, 0.0, 10.0, bytes(size))


def _words(context: str, count: int) -> TimestampsOut:
    return TimestampsOut(context, tuple(WordTiming("w", 0.0, 1.0, 0, 1) for _ in range(count)))


def test_audio_is_counted_as_base64_and_words_by_the_word() -> None:
    assert wire_bytes(_audio("a", 3000)) == 4000 + wire_bytes(CancelledOut("a", "", 0.0, 0.0, 0.0))
    assert wire_bytes(_words("a", 10)) > wire_bytes(_words("a", 1))


def test_the_outbox_says_when_it_is_full_and_when_it_has_room_again() -> None:
    async def scenario() -> list[bool]:
        changes: list[bool] = []
        outbox = Outbox(10_000, changes.append)
        for _ in range(3):
            assert outbox.put(_audio("a", 3000))  # 4,256 bytes each on the wire
        assert changes == [True] and outbox.full
        await outbox.get()
        assert changes == [True]  # 8,512: above half the size still
        await outbox.get()
        assert changes == [True, False] and not outbox.full and outbox.bytes == 4256
        return changes

    asyncio.run(scenario())


def test_past_its_stall_bound_the_outbox_refuses_and_queues_nothing() -> None:
    outbox = Outbox(1000)
    while outbox.put(_audio("a", 600)):
        pass
    assert STALL_FACTOR * 1000 - wire_bytes(_audio("a", 600)) < outbox.bytes <= STALL_FACTOR * 1000
    queued = len(outbox)
    assert not outbox.put(_audio("a", 600)) and len(outbox) == queued


def test_purging_a_cancelled_context_gives_its_bytes_back() -> None:
    changes: list[bool] = []
    outbox = Outbox(5000, changes.append)
    outbox.put(_audio("gone", 3000))
    outbox.put(_words("gone", 3))
    outbox.put(_audio("stays", 1500))
    assert changes == [True]
    outbox.purge("gone")
    assert len(outbox) == 1 and outbox.bytes == wire_bytes(_audio("stays", 1500))
    assert changes == [True, False]
