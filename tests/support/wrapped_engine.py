"""The real engine behind a test's own hooks: a test's engine overrides ``prepare`` or ``render``
(to count, fail, hold or watch) and calls ``super()`` for the real work."""

from __future__ import annotations

from voxflow.engines.base import FloatArray, Utterance, VoiceInfo, VoiceSettings
from voxflow.engines.piper import PiperEngine


class WrappedEngine:
    def __init__(self, inner: PiperEngine) -> None:
        self.inner = inner

    def voices(self) -> list[VoiceInfo]:
        return self.inner.voices()

    def voice_info(self, voice: str) -> VoiceInfo:
        return self.inner.voice_info(voice)

    def prepare(
        self, text: str, voice: str, settings: VoiceSettings, threads: int | None = None
    ) -> Utterance:
        return self.inner.prepare(text, voice, settings, threads)

    def render(
        self, utterance: Utterance, start_frame: int, end_frame: int, threads: int | None = None
    ) -> FloatArray:
        return self.inner.render(utterance, start_frame, end_frame, threads)
