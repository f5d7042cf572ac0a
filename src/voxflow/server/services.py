"""What the app factory builds once and hands to every transport (no globals, no singletons)."""

from __future__ import annotations

import asyncio
import logging
import os
import time
from concurrent.futures import Future
from dataclasses import dataclass, field, replace

from voxflow.audio.seam_settings import SeamSettings
from voxflow.config import ServerSettings, default_workers
from voxflow.connection.driver import SessionDriver
from voxflow.connection.encoder_pool import EncoderPool
from voxflow.connection.gateway import Gateway
from voxflow.connection.protocol_context import ProtocolContext
from voxflow.connection.runner import RunnerSettings, StopSignal
from voxflow.engines.base import VoiceSettings
from voxflow.engines.kokoro.voices import PREFIX, default_voices_dir
from voxflow.engines.registry import VoiceRegistry
from voxflow.engines.router import EngineRouter, build_engine
from voxflow.engines.split_cache import SplitCache
from voxflow.runtime.cache.phrase_cache import CacheSettings, PhraseCache
from voxflow.runtime.cache.redis_tier import RedisTier, RedisTierSettings
from voxflow.runtime.scheduler import Scheduler
from voxflow.runtime.scheduler_settings import SchedulerSettings
from voxflow.server.dictionaries import DirectoryDictionaryStore
from voxflow.server.metrics import ServerMetrics
from voxflow.server.warm import Warmup
from voxflow.session.admission import Admission, AdmissionSettings
from voxflow.session.errors import SessionError
from voxflow.session.events import ErrorOut, PrefetchSegment
from voxflow.session.load_limit import LoadLimit, LoadLimitSettings
from voxflow.session.options import SessionConfig, StartOptions
from voxflow.session.session import Session
from voxflow.text.chunking import ChunkingConfig
from voxflow.text.language import text_rules_of
from voxflow.text.lexicon_file import read_lexicon_file
from voxflow.text.normalize.normalizer import Normalizer

log = logging.getLogger(__name__)

# The Kokoro voice loaded at start-up when the default voice is not a Kokoro one.
KOKORO_VOICE = PREFIX + "af_heart"


@dataclass(frozen=True)
class Services:
    settings: ServerSettings
    registry: VoiceRegistry
    engine: EngineRouter
    scheduler: Scheduler
    metrics: ServerMetrics
    default_voice: str
    normalizer: Normalizer
    # Encoder steps of every connection run here, off the event loop (``EncodeLanes``): as many
    # threads as synthesis workers, since encoding competes with rendering for the same cores.
    encoder_pool: EncoderPool
    # The server-wide cap on active streams; every session of the server shares it.
    admission: Admission
    # The phrase cache (None: --cache-bytes 0) and its start-up warming (``--warm``).
    cache: PhraseCache | None = None
    warmup: Warmup | None = None
    # ElevenLabs' pronunciation dictionaries (None: no --dictionaries-dir).
    dictionaries: DirectoryDictionaryStore | None = None
    # Set when a shutdown's drain time is over: every connection's runner ends it with its
    # protocol's last words (``WireProtocol.shutdown``).
    stopping: StopSignal = field(default_factory=StopSignal)

    @classmethod
    def build(
        cls,
        settings: ServerSettings,
        metrics: ServerMetrics | None = None,
        engine: EngineRouter | None = None,
    ) -> Services:
        """Find voices, load the default one and start the workers (blocking: call off-loop).
        ``metrics``: the app's, when it counts refusals before the services exist. ``engine``:
        one the caller built already (``build_engine``), whose voices the server serves and
        whose loaded models it uses rather than loading its own; ``settings`` then name no
        voices (``ServerSettings.voice_sources``). None: built from ``settings``."""
        if engine is None:
            split_cache = SplitCache.from_setting(settings.split_cache, os.environ)
            engine = build_engine(voice_registry(settings), split_cache=split_cache)
        else:
            refuse_voice_sources(settings)
        registry = engine.registry
        default_voice = registry.get(settings.default_voice or registry.default_voice).name
        engine.load(default_voice)
        if registry.kokoro_enabled:
            # The model and a voice of each language now (with its phonemizer), not in a
            # listener's first request (seconds).
            for voice in _kokoro_voices_to_load(registry, default_voice):
                engine.load(voice)
        if settings.kokoro_fallback_voice is not None:
            fallback = registry.get(settings.kokoro_fallback_voice)
            if fallback.engine == "kokoro":
                raise ValueError("the Kokoro fallback voice must be a voice of another engine")
        cache = _phrase_cache(settings)
        if cache is not None:
            # The first key of a voice hashes its model: here, not in a listener's first job.
            cache.key(engine, "", default_voice, VoiceSettings())
        scheduler = Scheduler(
            engine,
            SchedulerSettings(
                workers=settings.worker_threads,
                max_lead_s=settings.max_lead_s,
                max_quiet_s=settings.max_quiet_s,
                # A job alone on the machine may use every core, no more than there are.
                wide_threads=min(SchedulerSettings.wide_threads, default_workers()),
            ),
            cache=cache,
        )
        metrics = metrics or ServerMetrics(settings.max_quiet_s)
        metrics.watch_scheduler(scheduler.stats)
        if cache is not None:
            shared = cache.shared
            metrics.watch_cache(
                cache.stats, shared.stats if isinstance(shared, RedisTier) else None
            )
        lexicon = (
            None if settings.lexicon_path is None else read_lexicon_file(settings.lexicon_path)
        )
        encoder_pool = EncoderPool(settings.worker_threads)
        metrics.watch_cpu(scheduler.work_ledger, scheduler.thread_ids, encoder_pool.thread_ids)
        # The capacity is learnt from the workers' slack, up to the operator's ceiling
        # (--max-load x workers; 0: no cost limit at all).
        limit = None
        if settings.capacity_ceiling:
            ceiling = LoadLimitSettings(ceiling=settings.capacity_ceiling)
            limit = LoadLimit(ceiling, scheduler.slack(), time.monotonic())
        admission = Admission(
            AdmissionSettings(
                settings.max_streams,
                retry_after_s=settings.retry_after_s,
                unpaced_share=1.0 / settings.worker_threads,
            ),
            costs=scheduler.audio_cost,
            on_refused=lambda refusal: metrics.count_rejected(refusal.value),
            limit=limit,
            slack=scheduler.slack,
            start_costs=scheduler.start_cost,
        )
        metrics.admitted_streams.set_function(lambda: admission.active)
        metrics.stream_limit.set_function(lambda: admission.limit)
        metrics.load.set_function(lambda: admission.load(time.monotonic()))
        metrics.capacity.set_function(lambda: admission.capacity)
        metrics.watch_admission(scheduler.slack, lambda: None if limit is None else limit.last)
        warmup = None
        if settings.warm_path is not None:
            if cache is None:
                raise ValueError("--warm needs the phrase cache (--cache-bytes > 0)")
            warmup = Warmup.from_file(settings.warm_path)
        services = cls(
            settings,
            registry,
            engine,
            scheduler,
            metrics,
            default_voice,
            Normalizer(lexicon),
            encoder_pool,
            admission,
            cache,
            warmup,
            None
            if settings.dictionaries_dir is None
            else DirectoryDictionaryStore(settings.dictionaries_dir),
        )
        if warmup is not None:
            warmup.start(services.prefetch)
        return services

    def session_config(self) -> SessionConfig:
        return SessionConfig(
            default_voice=self.default_voice,
            default_format=self.settings.default_format,
            chunking=ChunkingConfig(idle_flush_s=self.settings.idle_flush_s),
            max_contexts=self.settings.max_contexts_per_connection,
            max_message_chars=self.settings.max_message_chars,
            seams=SeamSettings(sentence_pause_ms=self.settings.sentence_pause_ms),
            normalizer=self.normalizer,
            phrase_cache=self.cache is not None,
            kokoro_slots=self.settings.kokoro_stream_slots,
            kokoro_fallback_voice=self.settings.kokoro_fallback_voice,
        )

    def prefetch(self, options: StartOptions, text: str) -> list[Future[str]]:
        """Queue ``text``'s engine requests (cut as a whole-text request with ``options`` would
        be) as phrase cache prefetches, on a session of the server's own (no admission slot, no
        connection): one future each. A refused text raises its ``SessionError``."""
        session = Session(self.session_config(), self.registry.get)
        session.prefetch(None, options, text, time.monotonic())
        futures: list[Future[str]] = []
        for output in session.drain():
            if isinstance(output, ErrorOut):
                raise SessionError(output.code, output.message, output.retryable)
            if isinstance(output, PrefetchSegment):
                futures.append(self.scheduler.prefetch(output.request))
        return futures

    def protocol_context(self) -> ProtocolContext:
        """What the wire protocols need of the server (voices, limits)."""
        return ProtocolContext.of(self.session_config(), self.registry.get, self.registry.list)

    def gateway(self) -> Gateway:
        """What the transports' routes need of the server."""
        return Gateway(
            context=self.protocol_context(),
            admission=self.admission,
            runner_settings=self.runner_settings(),
            new_driver=self.new_driver,
            new_request_driver=self.new_request_driver,
            prefetch=self.prefetch,
            dictionaries=self.dictionaries,
        )

    def new_driver(self, protocol: str, max_contexts: int | None = None) -> SessionDriver:
        """A session and its driver for one connection of ``protocol`` (on the event loop), with
        at most ``max_contexts`` contexts open (None: the server's limit)."""
        config = self.session_config()
        if max_contexts is not None:
            config = replace(config, max_contexts=max_contexts)
        return self._driver(protocol, config)

    def new_request_driver(self, protocol: str) -> SessionDriver:
        """A session and its driver for one HTTP request (call on the event loop).

        A request renders unpaced, as fast as the workers allow, until its outbox holds
        ``outbound_bytes``; a client reading at playback speed (a player) then paces it."""
        return self._driver(protocol, None)

    def _driver(self, protocol: str, config: SessionConfig | None) -> SessionDriver:
        session = Session(config or self.session_config(), self.registry.get, self.admission)
        return SessionDriver(
            session,
            self.scheduler,
            self.metrics,
            outbox_bytes=self.settings.outbound_bytes,
            encoder_pool=self.encoder_pool,
            protocol=protocol,
        )

    async def tick_admission(self) -> None:
        """Let admission's learnt capacity decide every interval, on the event loop where
        admission runs, also while no stream asks to be admitted (a capacity not in use
        falls back). Runs until cancelled."""
        while True:
            self.admission.learn(time.monotonic())
            await asyncio.sleep(self.admission.tick_s)

    def runner_settings(self) -> RunnerSettings:
        return RunnerSettings(write_timeout_s=self.settings.write_timeout_s, stopping=self.stopping)

    async def drain(self, drain_s: float) -> None:
        """A graceful shutdown's first part (on the event loop): admit no new stream, let the
        admitted ones finish for up to ``drain_s``, then tell every connection still open to
        end with its protocol's last words (``stopping``)."""
        self.admission.drain()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + drain_s
        while self.admission.active > 0 and loop.time() < deadline:
            await asyncio.sleep(0.05)
        if self.admission.active > 0:
            log.warning("drain time over with %d streams left; ending them", self.admission.active)
        self.stopping.set()
        # uvicorn's shutdown, once this returns, closes every WebSocket at once: each open
        # connection sends its last words first, within the runner's final-message bound.
        await self.stopping.said(self.runner_settings().final_message_s + 0.5)

    def shutdown(self) -> None:
        self.scheduler.shutdown()
        self.encoder_pool.shutdown(wait=True, cancel_futures=True)
        if self.cache is not None:
            self.cache.close()


def refuse_voice_sources(settings: ServerSettings) -> None:
    """``ValueError`` if ``settings`` name voices (``ServerSettings.voice_sources``), as they
    must not when the server is given an engine: that brings its own."""
    if named := settings.voice_sources():
        raise ValueError(
            f"the engine given brings its own voices: leave {', '.join(named)} unset, "
            "or give no engine"
        )


def _phrase_cache(settings: ServerSettings) -> PhraseCache | None:
    if settings.cache_bytes == 0:
        return None
    shared = None
    if settings.cache_url is not None:
        shared = RedisTier(
            RedisTierSettings(settings.cache_url, settings.cache_ttl_s, settings.cache_timeout_s)
        )
        log.info("phrase cache: shared tier redis at %s", shared.address)
    return PhraseCache(CacheSettings(memory_bytes=settings.cache_bytes), shared)


def voice_registry(settings: ServerSettings) -> VoiceRegistry:
    """The server's voices: Piper's, Kokoro's with ``settings.kokoro``, and the aliases."""
    kokoro_dir = None
    if settings.kokoro:
        kokoro_dir = settings.kokoro_voices_dir or default_voices_dir()
    return VoiceRegistry(settings.voices_dir, kokoro_dir=kokoro_dir, aliases=settings.aliases())


def _kokoro_voices_to_load(registry: VoiceRegistry, default_voice: str) -> list[str]:
    """The default voice if it is a Kokoro voice, else ``af_heart`` (or the first there is);
    then the first Kokoro voice of each other language."""
    kokoro = [v for v in registry.list() if v.engine == "kokoro"]
    default = registry.get(default_voice)
    if default.engine != "kokoro":
        names = [v.name for v in kokoro]
        default = registry.get(KOKORO_VOICE if KOKORO_VOICE in names else names[0])
    # By text language, which picks the phonemizer (en_GB is English: nothing more to load).
    first_of_language = {text_rules_of(v.language): v.name for v in reversed(kokoro)}
    first_of_language.pop(text_rules_of(default.language), None)
    return [default.name, *sorted(first_of_language.values())]
