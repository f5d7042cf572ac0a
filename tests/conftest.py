"""Shared fixtures: the real bundled voice, loaded once per test session."""

from __future__ import annotations

import pytest

from voxflow.engines.piper import EngineSettings, PiperEngine
from voxflow.engines.registry import VoiceRegistry


@pytest.fixture(scope="session")
def registry() -> VoiceRegistry:
    return VoiceRegistry()


@pytest.fixture(scope="session")
def engine(registry: VoiceRegistry) -> PiperEngine:
    engine = PiperEngine(registry, EngineSettings())
    engine.load("joe")
    return engine
