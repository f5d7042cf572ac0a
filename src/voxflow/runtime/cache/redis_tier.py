"""The phrase cache's shared tier in Redis: every replica's renderings, for every replica.

Redis must never make the server worse than no cache at all, so:

* a read waits at most ``timeout_s`` (a socket timeout; no retries): a slow or lost Redis is a
  miss, counted in ``errors``;
* after a failure, Redis is left alone for ``retry_s`` (reads are misses at once, writes are
  dropped), then the next read tries again: redis-py opens a new connection by itself, so the
  tier comes back without anyone restarting anything. Going down and coming back are logged once
  each, with the server's address (never the URL: it may hold a password);
* writes go through one thread with a short queue, off the workers; a full queue drops the write.

Entries are ``encode_phrase`` bytes under ``voxflow:phrase:<key>``, with a TTL.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from voxflow.runtime.cache.phrases import (
    CachedPhrase,
    PhraseFormatError,
    decode_phrase,
    encode_phrase,
)

__all__ = ["RedisTier", "RedisTierSettings", "RedisTierStats"]

log = logging.getLogger(__name__)

KEY_PREFIX = "voxflow:phrase:"
_WRITE_QUEUE = 64


@dataclass(frozen=True)
class RedisTierSettings:
    url: str
    ttl_s: float = 7 * 24 * 3600.0
    timeout_s: float = 0.05
    retry_s: float = 1.0


@dataclass(frozen=True)
class RedisTierStats:
    available: bool
    errors: int  # reads and writes that failed (down, slow, refused, bad data)
    writes: int
    dropped_writes: int  # the writer's queue was full, or Redis was down


class RedisTier:
    """See the module docstring."""

    def __init__(
        self, settings: RedisTierSettings, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._settings = settings
        self._clock = clock
        self._client = redis.Redis.from_url(
            settings.url,
            socket_timeout=settings.timeout_s,
            socket_connect_timeout=settings.timeout_s,
            retry=Retry(NoBackoff(), 0),
        )
        parts = urlsplit(settings.url)
        self.address = f"{parts.hostname}:{parts.port or 6379}"
        self._lock = threading.Lock()
        self._down_until: float | None = None
        self._errors = 0
        self._writes = 0
        self._dropped = 0
        self._queue: queue.Queue[tuple[str, CachedPhrase] | None] = queue.Queue(_WRITE_QUEUE)
        self._writer = threading.Thread(target=self._write_loop, name="voxflow-redis", daemon=True)
        self._writer.start()

    def get(self, key: str) -> CachedPhrase | None:
        if self._resting():
            return None
        try:
            data = self._client.get(KEY_PREFIX + key)
        except (redis.RedisError, OSError) as error:
            self._failed(error)
            return None
        self._up()
        if data is None:
            return None
        try:
            return decode_phrase(bytes(data))  # type: ignore[arg-type]
        except PhraseFormatError as error:
            # Another version's entry, or a damaged one: a miss (it is overwritten once this
            # replica renders the phrase again).
            with self._lock:
                self._errors += 1
            log.warning("phrase cache: unreadable entry in redis at %s: %s", self.address, error)
            return None

    def put(self, key: str, phrase: CachedPhrase) -> None:
        if self._resting():
            with self._lock:
                self._dropped += 1
            return
        try:
            self._queue.put_nowait((key, phrase))
        except queue.Full:
            with self._lock:
                self._dropped += 1

    def stats(self) -> RedisTierStats:
        with self._lock:
            return RedisTierStats(
                self._down_until is None, self._errors, self._writes, self._dropped
            )

    def close(self) -> None:
        """Stop the writer (what is queued is written first, each bounded by the timeout)."""
        self._queue.put(None)
        self._writer.join(timeout=5.0)
        self._client.close()

    # -- internals ---------------------------------------------------------------------------------

    def _resting(self) -> bool:
        with self._lock:
            return self._down_until is not None and self._clock() < self._down_until

    def _failed(self, error: Exception) -> None:
        with self._lock:
            self._errors += 1
            was_up = self._down_until is None
            self._down_until = self._clock() + self._settings.retry_s
        if was_up:
            log.warning(
                "phrase cache: redis at %s unavailable (%s: %s); serving from memory and "
                "rendering, retrying every %.1f s",
                self.address,
                type(error).__name__,
                error,
                self._settings.retry_s,
            )

    def _up(self) -> None:
        with self._lock:
            was_down = self._down_until is not None
            self._down_until = None
        if was_down:
            log.info("phrase cache: redis at %s is back", self.address)

    def _write_loop(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:  # close
                return
            key, phrase = item
            if self._resting():
                with self._lock:
                    self._dropped += 1
                continue
            try:
                self._client.set(
                    KEY_PREFIX + key, encode_phrase(phrase), px=int(self._settings.ttl_s * 1000)
                )
            except (redis.RedisError, OSError) as error:
                self._failed(error)
                continue
            with self._lock:
                self._writes += 1
            self._up()
