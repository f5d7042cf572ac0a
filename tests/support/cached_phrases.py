"""What the phrase cache's tests ask for: requests of two agent phrases (a short one and a long
one) to render and cache, and phrases as the cache keeps them made up without an engine
(``frames`` frames of one sample value) for tests of its tiers that care about bytes, not
speech."""

from __future__ import annotations

import numpy as np

from voxflow.engines.base import Utterance, VoiceSettings
from voxflow.runtime.cache.phrases import CachedPhrase
from voxflow.runtime.jobs import SegmentRequest

SENTENCE = "One moment, let me check that for you."
LONG = (
    "Your order left our warehouse this morning and should reach you by Thursday afternoon, "
    "unless the carrier runs late because of the holiday weekend traffic."
)


def phrase_request(text: str, tag: int = 0, seed: int | None = 5) -> SegmentRequest:
    """An engine request for ``text`` in the bundled voice, seeded (so a hit is comparable)."""
    return SegmentRequest(text, "joe", VoiceSettings(seed=seed), tag)


def flat_phrase(frames: int, value: float = 0.1, hop: int = 256) -> CachedPhrase:
    utterance = Utterance(
        text="x",
        voice="joe",
        sample_rate=22050,
        samples_per_frame=hop,
        latents=np.zeros((0, frames), dtype=np.float32),
        phonemes=(),
        phoneme_frames=np.zeros(0, dtype=np.int64),
        words=(),
        onset_frames=3,
    )
    return CachedPhrase(utterance, 0, np.full(frames * hop, value, dtype=np.float32))
