"""``--warm FILE``: phrases rendered into the phrase cache at start-up, in the background.

The file has one phrase a line, as a client would send it (the session normalizes and cuts it as
it cuts a whole-text request, so the warmed entries are the ones a request for the phrase looks
up); blank lines and lines starting with ``#`` are skipped. The phrases are rendered with the
default voice and settings, when the workers have nothing due
(``voxflow.runtime.cache.background``); ``/readyz`` answers ``warming`` until every one is done
or has failed (each failure is logged).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path

from voxflow.session.errors import SessionError
from voxflow.session.options import StartOptions

__all__ = ["Warmup"]

log = logging.getLogger(__name__)


class Warmup:
    def __init__(self, phrases: list[str]) -> None:
        self.phrases = phrases
        self._lock = threading.Lock()
        self._total = 0
        self._done = 0
        self._failed = 0
        self._started = False

    @classmethod
    def from_file(cls, path: Path) -> Warmup:
        """The phrases of ``path`` (an unreadable file raises: the server must not start)."""
        lines = path.read_text(encoding="utf-8").splitlines()
        return cls([line.strip() for line in lines if line.strip() and not line.startswith("#")])

    def start(self, prefetch: Callable[[StartOptions, str], list[Future[str]]]) -> None:
        """Queue every phrase's engine requests through ``prefetch`` (``Services.prefetch``;
        quick: no rendering here)."""
        futures: list[Future[str]] = []
        for phrase in self.phrases:
            try:
                futures += prefetch(StartOptions(), phrase)
            except SessionError as refused:
                log.warning("warm: phrase %r refused: %s", phrase[:60], refused.message)
                with self._lock:
                    self._failed += 1
        with self._lock:
            self._total = len(futures)
            self._started = True
        log.info("warm: %d phrases, %d engine requests queued", len(self.phrases), len(futures))
        for future in futures:
            future.add_done_callback(self._finished)
        if not futures:
            self._log_done()

    def _finished(self, future: Future[str]) -> None:
        error = future.exception()
        with self._lock:
            self._done += 1
            if error is not None:
                self._failed += 1
            last = self._done == self._total
        if last:
            self._log_done()

    def _log_done(self) -> None:
        with self._lock:
            done, failed = self._done, self._failed
        log.info("warm: done, %d engine requests rendered or found, %d failed", done, failed)

    @property
    def finished(self) -> bool:
        with self._lock:
            return self._started and self._done >= self._total

    def progress(self) -> dict[str, int]:
        """For ``/readyz``: requests queued, done (rendered, found or failed), failed."""
        with self._lock:
            return {"total": self._total, "done": self._done, "failed": self._failed}
