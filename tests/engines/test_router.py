"""The router that puts Kokoro beside Piper (``voxflow.engines.router``): each voice to its engine,
with the real Kokoro model and the installed voices."""

from __future__ import annotations

import pytest

from voxflow.engines.base import VoiceSettings
from voxflow.engines.kokoro.engine import KokoroEngine
from voxflow.engines.piper import PiperEngine
from voxflow.engines.registry import VoiceRegistry
from voxflow.engines.router import EngineRouter, build_engine

HEART = "kokoro:af_heart"
BLEND = "kokoro:af_heart*0.5+am_michael*0.5"
SHORT = "Hello there."
RATE = 24000


def test_build_engine_routes_each_voice_to_its_engine(kokoro_registry: VoiceRegistry) -> None:
    router = build_engine(kokoro_registry)
    assert router.engine_name("joe") == "piper"
    assert router.engine_name(HEART) == "kokoro"
    assert router.engine_name(BLEND) == "kokoro"
    assert isinstance(router.engine_for("joe"), PiperEngine)
    assert isinstance(router.engine_for(HEART), KokoroEngine)
    assert router.voice_info("joe").sample_rate == 22050
    assert router.voice_info(HEART).sample_rate == RATE
    # Without the Kokoro directory there are no Kokoro voices, and no Kokoro engine.
    plain = build_engine(VoiceRegistry())
    assert [v.name for v in plain.voices()] == ["joe"]
    assert plain.engine_name("joe") == "piper"


def test_the_router_renders_piper_and_kokoro_voices(
    kokoro_registry: VoiceRegistry, kokoro_engine: KokoroEngine, engine: PiperEngine
) -> None:
    # The session's loaded engines (build_engine's own would load and split the model again).
    router = EngineRouter(kokoro_registry, {"piper": engine, "kokoro": kokoro_engine})
    for voice, rate in (("joe", 22050), (HEART, RATE)):
        utterance = router.prepare(SHORT, voice, VoiceSettings(seed=1))
        assert (utterance.voice, utterance.sample_rate) == (voice, rate)
        audio = router.render(utterance, 0, min(16, utterance.num_frames))
        assert audio.shape == (min(16, utterance.num_frames) * utterance.samples_per_frame,)
    off = EngineRouter(kokoro_registry, {"piper": engine})
    with pytest.raises(ValueError, match="needs the kokoro engine, which is off"):
        off.prepare(SHORT, HEART, VoiceSettings())
