"""Server settings: one frozen object, built once (CLI flags or ``VOXFLOW_*`` variables) and
passed in."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path


def default_workers() -> int:
    """One worker per core: each runs one ONNX Runtime job on one thread."""
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1)


@dataclass(frozen=True)
class ServerSettings:
    host: str = "127.0.0.1"
    port: int = 8000
    voices_dir: Path | None = None
    default_voice: str | None = None  # None: the bundled voice
    default_format: str = "pcm_24000"
    workers: int = 0  # 0: one per core
    max_contexts_per_connection: int = 16
    max_message_chars: int = 10_000
    outbound_queue: int = 512  # client events buffered per connection before it counts as stalled
    write_timeout_s: float = 10.0  # a send that takes longer closes the connection
    idle_flush_s: float | None = None  # flush buffered text after this much silence
    max_lead_s: float = 20.0  # a stream this far ahead of its client's playback waits
    sentence_pause_ms: float = 250.0  # silence between a sentence's end and the next one's speech
    lexicon_path: Path | None = None  # server-wide pronunciation lexicon (word<TAB>respelling)
    wyoming_uri: str | None = None  # e.g. tcp://0.0.0.0:10200 to also serve Wyoming (off)
    # On SIGTERM: how long live connections may take to finish before they are cut off.
    drain_s: float = 10.0

    def __post_init__(self) -> None:
        if not 0 < self.port < 65536:
            raise ValueError(f"port must be 1..65535, got {self.port}")
        if self.workers < 0:
            raise ValueError("workers must be >= 0")
        if self.write_timeout_s <= 0:
            raise ValueError("write_timeout_s must be > 0")
        if self.drain_s <= 0:
            raise ValueError("drain_s must be > 0")
        if self.max_lead_s <= 0:
            raise ValueError("max_lead_s must be > 0")
        if self.idle_flush_s is not None and self.idle_flush_s <= 0:
            raise ValueError("idle_flush_s must be > 0")

    @property
    def worker_threads(self) -> int:
        return self.workers or default_workers()

    @classmethod
    def from_env(cls, env: Mapping[str, str], **overrides: object) -> ServerSettings:
        """Settings from ``VOXFLOW_<FIELD>`` variables, then ``overrides`` (non-None) on top."""
        values: dict[str, object] = {}
        for field in fields(cls):
            raw = env.get(f"VOXFLOW_{field.name.upper()}")
            if raw is None:
                continue
            default = getattr(cls, field.name)
            if field.name in ("voices_dir", "lexicon_path"):
                values[field.name] = Path(raw)
            elif field.name == "idle_flush_s" or isinstance(default, float):
                values[field.name] = float(raw)
            elif isinstance(default, int):
                values[field.name] = int(raw)
            else:
                values[field.name] = raw
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)  # type: ignore[arg-type]
