"""What the app factory builds once and hands to every transport (no globals, no singletons)."""

from __future__ import annotations

from dataclasses import dataclass

from voxflow.audio.seams import SeamSettings
from voxflow.config import ServerSettings
from voxflow.engines.piper import EngineSettings, PiperEngine
from voxflow.engines.registry import VoiceRegistry
from voxflow.runtime.scheduler import Scheduler, SchedulerSettings
from voxflow.session.driver import SessionDriver
from voxflow.session.encoder_pool import EncoderPool
from voxflow.session.metrics import ServerMetrics
from voxflow.session.runner import RunnerSettings
from voxflow.session.session import Session, SessionConfig
from voxflow.text.buffer import ChunkingConfig
from voxflow.text.lexicon import Lexicon
from voxflow.text.normalize import Normalizer


@dataclass(frozen=True)
class Services:
    settings: ServerSettings
    registry: VoiceRegistry
    engine: PiperEngine
    scheduler: Scheduler
    metrics: ServerMetrics
    default_voice: str
    normalizer: Normalizer
    # Encoder steps of every connection run here, off the event loop (``EncodeLanes``): as many
    # threads as synthesis workers, since encoding competes with rendering for the same cores.
    encoder_pool: EncoderPool

    @classmethod
    def build(cls, settings: ServerSettings) -> Services:
        """Find voices, load the default one and start the workers (blocking: call off-loop)."""
        registry = VoiceRegistry(settings.voices_dir)
        default_voice = registry.get(settings.default_voice or registry.default_voice).name
        engine = PiperEngine(registry, EngineSettings(intra_op_threads=1))
        engine.load(default_voice)
        scheduler = Scheduler(
            engine,
            SchedulerSettings(workers=settings.worker_threads, max_lead_s=settings.max_lead_s),
        )
        metrics = ServerMetrics()
        metrics.watch_scheduler(scheduler.stats)
        lexicon = (
            None if settings.lexicon_path is None else Lexicon.from_file(settings.lexicon_path)
        )
        encoder_pool = EncoderPool(settings.worker_threads)
        return cls(
            settings,
            registry,
            engine,
            scheduler,
            metrics,
            default_voice,
            Normalizer(lexicon),
            encoder_pool,
        )

    def session_config(self) -> SessionConfig:
        return SessionConfig(
            default_voice=self.default_voice,
            default_format=self.settings.default_format,
            chunking=ChunkingConfig(idle_flush_s=self.settings.idle_flush_s),
            max_contexts=self.settings.max_contexts_per_connection,
            max_message_chars=self.settings.max_message_chars,
            seams=SeamSettings(sentence_pause_ms=self.settings.sentence_pause_ms),
            normalizer=self.normalizer,
        )

    def new_driver(self, config: SessionConfig | None = None) -> SessionDriver:
        """A session and its driver for one connection (call on the event loop)."""
        return self._driver(config, self.settings.outbound_queue)

    def new_request_driver(self) -> SessionDriver:
        """A session and its driver for one HTTP request (call on the event loop).

        Its outbox has no count limit: a request renders unpaced, as fast as the workers allow,
        and a client may read slower than that (a player reading at playback speed) without
        being a client that stopped reading; its one text, at most ``max_message_chars``, bounds
        what it can queue. A client that stops reading is closed by the write timeout.
        """
        return self._driver(None, None)

    def _driver(self, config: SessionConfig | None, queue_size: int | None) -> SessionDriver:
        session = Session(config or self.session_config(), self.registry.get)
        return SessionDriver(
            session,
            self.scheduler,
            self.metrics,
            queue_size=queue_size,
            encoder_pool=self.encoder_pool,
        )

    def runner_settings(self) -> RunnerSettings:
        return RunnerSettings(write_timeout_s=self.settings.write_timeout_s)

    def shutdown(self) -> None:
        self.scheduler.shutdown()
        self.encoder_pool.shutdown(wait=True, cancel_futures=True)
