"""voxflow: real-time streaming text-to-speech for voice agents.

The public API: what an application that embeds voxflow, or drives a voxflow server, imports.

* Synthesis in this process: ``LocalSpeaker`` runs the server's own path (segments, leads and
  takeovers, render windows, seams) on an engine from ``build_engine(VoiceRegistry())``, or
  from ``build_engine(installed_voices())`` for every voice installed here (Kokoro's too), with
  its workers and windows as ``SchedulerSettings`` say. It yields the audio (``AudioOut``) and
  the ``SpokenWords`` (``WordTiming``s, with the engine request that timed them) a client of the
  server would receive; ``say`` collects them (``SayResult``, ``SayStats``).
* A server in this process: ``create_app(ServerSettings(...))`` is the ASGI app ``voxflow serve``
  runs; ``create_app(settings, engine)`` serves the voices of an engine the application built
  already (the one its ``LocalSpeaker`` speaks with), with the models it loaded.
* A server elsewhere: ``VoxflowClient`` speaks the native WebSocket protocol and yields its
  events (``AudioEvent``, ``TimestampsEvent``, ``DoneEvent``, ``CancelledEvent``,
  ``ErrorEvent``); ``speak`` records one context's audio and word timings; ``PlayoutBuffer``
  models a client's player.
* The settings they take: ``VoiceSettings`` (speed, seed, speaker), ``StartOptions`` (a context's
  voice, settings, format, normalization, markup: ``SSML`` or another ``SsmlDialect``, volume,
  pause after a sentence), ``SessionConfig`` and ``ChunkingConfig``.
* The text stages those settings configure: ``TextBuffer`` cuts text fed to it (an LLM's tokens)
  into the ``Segment``s a session speaks (each ended as ``SegmentEnd`` says), as the server cuts
  them, and ``segment_text`` cuts a whole text; ``Normalizer`` (``SessionConfig.normalizer``)
  turns a segment's written text into what is spoken, with a pronunciation ``Lexicon`` of
  ``LexiconEntry``s (server-wide, or a context's own in ``StartOptions.lexicon``).
* The output formats (``StartOptions.output_format``): ``SUPPORTED_FORMATS`` names them,
  ``parse_output_format`` says what a name means (``OutputFormat``: codec, rate, bit rate), and
  ``StreamEncoder`` is the server's encoder of a stream into one, for an application that
  encodes audio of its own as the speech is (a recorded prompt in a call's μ-law).
* One engine on its own: ``KokoroEngine`` (``KokoroSettings``: its threads, context and prior)
  prepares and renders as the server's workers do, and ``profiled_kokoro`` runs it with ONNX
  Runtime's profiler on (``KokoroProfileFiles``: ``voxflow bench-kokoro-profile``).

Commands added to the ``voxflow`` command line by another distribution (the benchmarks') use
the contract of ``voxflow.cli.plugins``. Everything else is internal: its modules move as the
code does.
"""

from voxflow.audio.encoders import StreamEncoder
from voxflow.audio.formats import SUPPORTED_FORMATS, OutputFormat, parse_output_format
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
from voxflow.connection.speaker import LocalSpeaker, SayResult, SayStats, SpokenWords
from voxflow.engines.base import Engine, VoiceNotFoundError, VoiceSettings
from voxflow.engines.kokoro.engine import KokoroEngine, KokoroSettings
from voxflow.engines.kokoro.model import read_model as read_kokoro_model
from voxflow.engines.kokoro.profiling import KokoroProfileFiles, profiled_kokoro
from voxflow.engines.registry import VoiceRegistry, installed_voices
from voxflow.engines.router import build_engine
from voxflow.engines.split_cache import SplitCache
from voxflow.runtime.scheduler_settings import SchedulerSettings
from voxflow.server.app import create_app
from voxflow.session.events import AudioOut, WordTiming
from voxflow.session.options import SessionConfig, StartOptions
from voxflow.text.buffer import TextBuffer, segment_text
from voxflow.text.chunking import ChunkingConfig, Segment, SegmentEnd, Strategy
from voxflow.text.language import TextLanguage, text_language_of, text_rules_of
from voxflow.text.lexicon import Lexicon, LexiconEntry
from voxflow.text.normalize.normalizer import NormalizationMode, Normalizer
from voxflow.text.ssml import SSML, SsmlDialect
from voxflow.version import __version__

__all__ = [
    "SSML",
    "SUPPORTED_FORMATS",
    "AudioEvent",
    "AudioOut",
    "CancelledEvent",
    "ChunkingConfig",
    "ContextRecorder",
    "ContextResult",
    "DoneEvent",
    "DoneMetrics",
    "Engine",
    "ErrorEvent",
    "Event",
    "KokoroEngine",
    "KokoroProfileFiles",
    "KokoroSettings",
    "Lexicon",
    "LexiconEntry",
    "LocalSpeaker",
    "NormalizationMode",
    "Normalizer",
    "OutputFormat",
    "PlayoutBuffer",
    "PlayoutStats",
    "SayResult",
    "SayStats",
    "SchedulerSettings",
    "Segment",
    "SegmentEnd",
    "ServerSettings",
    "SessionConfig",
    "SplitCache",
    "SpokenWords",
    "SsmlDialect",
    "StartOptions",
    "Strategy",
    "StreamEncoder",
    "TextBuffer",
    "TextLanguage",
    "TimestampsEvent",
    "VoiceNotFoundError",
    "VoiceRegistry",
    "VoiceSettings",
    "VoxflowClient",
    "VoxflowConnectionError",
    "WordTimestamp",
    "WordTiming",
    "__version__",
    "build_engine",
    "create_app",
    "installed_voices",
    "parse_output_format",
    "profiled_kokoro",
    "read_kokoro_model",
    "segment_text",
    "speak",
    "stream_url",
    "text_language_of",
    "text_rules_of",
]
