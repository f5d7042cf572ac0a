"""The real engine, counting its text stages and windows: what a test of the phrase cache reads
to tell a hit (the engine did nothing) from a miss."""

from __future__ import annotations

import threading

from tests.support.wrapped_engine import WrappedEngine
from voxflow.engines.base import FloatArray, Utterance, VoiceSettings
from voxflow.engines.piper import PiperEngine


class CountingEngine(WrappedEngine):
    def __init__(self, inner: PiperEngine) -> None:
        super().__init__(inner)
        self.prepares = 0
        self.renders = 0
        self.lock = threading.Lock()

    def prepare(
        self, text: str, voice: str, settings: VoiceSettings, threads: int | None = None
    ) -> Utterance:
        with self.lock:
            self.prepares += 1
        return super().prepare(text, voice, settings, threads)

    def render(
        self, utterance: Utterance, start_frame: int, end_frame: int, threads: int | None = None
    ) -> FloatArray:
        with self.lock:
            self.renders += 1
        return super().render(utterance, start_frame, end_frame, threads)
