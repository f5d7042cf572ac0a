from __future__ import annotations

from pathlib import Path

from voxflow.config import VOICE_SOURCE_FIELDS, ServerSettings


def test_voice_sources_are_the_voice_settings_set_away_from_their_defaults() -> None:
    assert ServerSettings().voice_sources() == ()
    # What the server does with its voices is not where they come from.
    serving = ServerSettings(default_voice="joe", workers=3, kokoro_fallback_voice="joe")
    assert serving.voice_sources() == ()
    named = ServerSettings(split_cache="off", kokoro=True, voices_dir=Path("voices"))
    assert named.voice_sources() == ("voices_dir", "kokoro", "split_cache")
    assert set(VOICE_SOURCE_FIELDS) == {
        "voices_dir",
        "kokoro",
        "kokoro_voices_dir",
        "voice_aliases",
        "split_cache",
    }
