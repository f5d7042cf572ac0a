"""One ``Engine`` over several: each voice's ``VoiceInfo.engine`` picks the engine that renders it.

The scheduler, the cache and the sessions hold one engine; with Kokoro enabled that engine is
this router over ``{"piper": PiperEngine, "kokoro": KokoroEngine}``.
"""

from __future__ import annotations

from collections.abc import Mapping

from voxflow.engines.base import Engine, FloatArray, Utterance, VoiceInfo, VoiceSettings
from voxflow.engines.kokoro.engine import KokoroEngine, KokoroSettings
from voxflow.engines.piper import EngineSettings, PiperEngine
from voxflow.engines.registry import VoiceRegistry
from voxflow.engines.split_cache import SplitCache


def build_engine(
    registry: VoiceRegistry, threads: int = 1, split_cache: SplitCache | None = None
) -> EngineRouter:
    """The engine for every voice ``registry`` has: Piper's, and Kokoro's when the registry
    offers Kokoro voices. ``threads``: intra-op threads of an ordinary job; ``split_cache``:
    where the cut and optimized models are kept between starts (None: made at every load)."""
    engines: dict[str, Engine] = {
        "piper": PiperEngine(
            registry, EngineSettings(intra_op_threads=threads, split_cache=split_cache)
        )
    }
    if registry.kokoro_enabled:
        engines["kokoro"] = KokoroEngine(
            registry, KokoroSettings(intra_op_threads=threads, split_cache=split_cache)
        )
    return EngineRouter(registry, engines)


class EngineRouter:
    """Dispatches every call to the engine of the voice it names."""

    def __init__(self, registry: VoiceRegistry, engines: Mapping[str, Engine]) -> None:
        self._registry = registry
        self._engines = dict(engines)

    @property
    def registry(self) -> VoiceRegistry:
        """The voices this engine renders."""
        return self._registry

    def engine_name(self, voice: str) -> str:
        """``piper`` or ``kokoro``: which engine renders ``voice``."""
        return self._registry.get(voice).engine

    def load(self, voice: str) -> None:
        """Load ``voice`` now (its engine's model too), rather than on its first request."""
        engine = self.engine_for(voice)
        if isinstance(engine, PiperEngine | KokoroEngine):
            engine.load(voice)

    def engine_for(self, voice: str) -> Engine:
        info = self._registry.get(voice)
        engine = self._engines.get(info.engine)
        if engine is None:
            raise ValueError(f"voice {info.name} needs the {info.engine} engine, which is off")
        return engine

    def voices(self) -> list[VoiceInfo]:
        return self._registry.list()

    def voice_info(self, voice: str) -> VoiceInfo:
        return self._registry.get(voice)

    def prepare(
        self, text: str, voice: str, settings: VoiceSettings, threads: int | None = None
    ) -> Utterance:
        return self.engine_for(voice).prepare(text, voice, settings, threads)

    def render(
        self, utterance: Utterance, start_frame: int, end_frame: int, threads: int | None = None
    ) -> FloatArray:
        return self.engine_for(utterance.voice).render(utterance, start_frame, end_frame, threads)
