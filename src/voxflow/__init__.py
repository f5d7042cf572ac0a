"""voxflow: real-time streaming text-to-speech for voice agents.

The public API: what an application that embeds voxflow, or drives a voxflow server, imports.

* Synthesis in this process: ``LocalSpeaker`` runs the server's own path (segments, leads and
  takeovers, render windows, seams) on an engine from ``build_engine(VoiceRegistry())``, or
  from ``build_engine(installed_voices())`` for every voice installed here (Kokoro's too), with
  its workers and windows as ``SchedulerSettings`` say.
* A server in this process: ``create_app(ServerSettings(...))`` is the ASGI app ``voxflow serve``
  runs.
* A server elsewhere: ``VoxflowClient`` speaks the native WebSocket protocol and yields its
  events (``AudioEvent``, ``TimestampsEvent``, ``DoneEvent``, ``CancelledEvent``,
  ``ErrorEvent``); ``speak`` records one context's audio and word timings; ``PlayoutBuffer``
  models a client's player.
* The settings they take: ``VoiceSettings`` (speed, seed, speaker), ``StartOptions`` (a context's
  voice, settings, format, normalization, markup: ``SSML`` or another ``SsmlDialect``, volume,
  pause after a sentence), ``SessionConfig`` and ``ChunkingConfig``.
* The segmenter those settings configure: ``TextBuffer`` cuts text fed to it (an LLM's tokens)
  into the ``Segment``s a session speaks, as the server cuts them; ``segment_text`` cuts a
  whole text.

Commands added to the ``voxflow`` command line by another distribution (the benchmarks') use
the contract of ``voxflow.cli.plugins``. Everything else is internal: its modules move as the
code does.
"""

from voxflow.client import (
    AudioEvent,
    CancelledEvent,
    ContextRecorder,
    ContextResult,
    DoneEvent,
    DoneMetrics,
    ErrorEvent,
    Event,
    PlayoutBuffer,
    PlayoutStats,
    TimestampsEvent,
    VoxflowClient,
    VoxflowConnectionError,
    WordTimestamp,
    speak,
    stream_url,
)
from voxflow.config import ServerSettings
from voxflow.connection.speaker import LocalSpeaker, SayResult, SayStats
from voxflow.engines.base import Engine, VoiceNotFoundError, VoiceSettings
from voxflow.engines.registry import VoiceRegistry, installed_voices
from voxflow.engines.router import build_engine
from voxflow.engines.split_cache import SplitCache
from voxflow.runtime.scheduler_settings import SchedulerSettings
from voxflow.server.app import create_app
from voxflow.session.options import SessionConfig, StartOptions
from voxflow.text.buffer import TextBuffer, segment_text
from voxflow.text.chunking import ChunkingConfig, Segment, Strategy
from voxflow.text.normalize.normalizer import NormalizationMode
from voxflow.text.ssml import SSML, SsmlDialect
from voxflow.version import __version__

__all__ = [
    "SSML",
    "AudioEvent",
    "CancelledEvent",
    "ChunkingConfig",
    "ContextRecorder",
    "ContextResult",
    "DoneEvent",
    "DoneMetrics",
    "Engine",
    "ErrorEvent",
    "Event",
    "LocalSpeaker",
    "NormalizationMode",
    "PlayoutBuffer",
    "PlayoutStats",
    "SayResult",
    "SayStats",
    "SchedulerSettings",
    "Segment",
    "ServerSettings",
    "SessionConfig",
    "SplitCache",
    "SsmlDialect",
    "StartOptions",
    "Strategy",
    "TextBuffer",
    "TimestampsEvent",
    "VoiceNotFoundError",
    "VoiceRegistry",
    "VoiceSettings",
    "VoxflowClient",
    "VoxflowConnectionError",
    "WordTimestamp",
    "__version__",
    "build_engine",
    "create_app",
    "installed_voices",
    "segment_text",
    "speak",
    "stream_url",
]
