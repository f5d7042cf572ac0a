"""The session's map from the text layer's ``SegmentEnd`` to the seam joiner's ``JoinKind``."""

from __future__ import annotations

import pytest

from voxflow.audio.seam_settings import JoinKind, SeamSettings
from voxflow.session.context import join_kind
from voxflow.text.chunking import SegmentEnd


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
