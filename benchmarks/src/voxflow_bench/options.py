"""What ``voxflow bench`` runs: the corpus, the sections and their settings."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from voxflow import TextLanguage
from voxflow_bench.corpus import Reply, load_corpus

__all__ = ["SECTIONS", "BenchOptions"]

SECTIONS = ("full", "tokens", "cancel", "concurrency", "memory")

LONG_TEXT = (
    "Thanks for waiting while I checked your order in our system. The package left our "
    "warehouse on Monday morning and is now with the regional courier, who expects to deliver "
    "it on Thursday between nine and noon. You will get a text message about an hour before the "
    "driver arrives, with a link to follow the van on a map. If nobody is home, the driver will "
    "leave a card and try again the next day, or you can pick the parcel up from the post office "
    "on Elm Street after four. Would you like me to change the delivery address, or is there "
    "anything else I can do for you today?"
)


@dataclass(frozen=True)
class BenchOptions:
    replies: tuple[Reply, ...] = field(default_factory=load_corpus)
    sections: tuple[str, ...] = SECTIONS
    repeats: int = 1  # runs of each reply in the full-text section
    token_rate: float = 50.0  # LLM tokens per second in the tokens section
    concurrency: tuple[int, ...] = (1, 4, 8, 16)
    rounds: int = 3  # rounds per concurrency level, each with other replies
    capacity: tuple[int, ...] = ()  # levels of the capacity sweep (empty: no sweep)
    cancel_repeats: int = 10
    cancel_text: str = LONG_TEXT
    cancel_after_ms: float = 300.0  # barge in once this much audio has arrived
    cancel_grace_ms: float = 250.0  # how long to watch for audio after `cancelled`
    playout_buffer_ms: float = 150.0
    output_format: str = "pcm_24000"
    voice: str | None = None  # None: the server's default voice
    # The language of the voice's text: the first segment and sentence are found by its rules.
    language: TextLanguage = TextLanguage.ENGLISH
    seed: int | None = 1  # seeded synthesis: every run renders the same audio
    run_timeout_s: float = 120.0  # a context that takes longer counts as an error
    warmup: bool = True  # one untimed context first, so model warm-up is not measured
    long_text_chars: int = 10_000  # the memory section's long HTTP request
    busy_streams: int = 8  # the memory section's streams at once
    stopped_reader_s: float = 8.0  # how long the memory section's client reads nothing
    # The memory section's wait before it reads the resident size: the server returns freed
    # memory once its workers have been idle 0.25 s; this leaves it room.
    memory_settle_s: float = 1.0
    # The gap between the three samples of each reading of the resident size.
    memory_sample_gap_s: float = 0.2

    def __post_init__(self) -> None:
        if not self.replies:
            raise ValueError("the corpus has no replies")
        unknown = [s for s in self.sections if s not in SECTIONS]
        if unknown or not self.sections:
            raise ValueError(f"sections must be among {', '.join(SECTIONS)}, got {unknown}")
        if self.repeats < 1 or self.rounds < 1 or self.cancel_repeats < 1:
            raise ValueError("repeats, rounds and cancel_repeats must be >= 1")
        if self.token_rate <= 0:
            raise ValueError("token_rate must be > 0")
        if any(n < 1 for n in (*self.concurrency, *self.capacity)):
            raise ValueError("concurrency and capacity levels must be >= 1")
        if self.playout_buffer_ms < 0 or self.cancel_after_ms < 0 or self.cancel_grace_ms < 0:
            raise ValueError("playout_buffer_ms, cancel_after_ms and cancel_grace_ms must be >= 0")
        if self.run_timeout_s <= 0:
            raise ValueError("run_timeout_s must be > 0")
        if self.stopped_reader_s < 1.5:
            raise ValueError("stopped_reader_s must be >= 1.5")
        if self.memory_settle_s < 0 or self.memory_sample_gap_s < 0:
            raise ValueError("memory_settle_s and memory_sample_gap_s must be >= 0")
        if self.long_text_chars < 1 or self.busy_streams < 1:
            raise ValueError("long_text_chars and busy_streams must be >= 1")
        if not self.cancel_text.strip():
            raise ValueError("cancel_text must be non-empty")

    def runs(self, section: str) -> bool:
        return section in self.sections

    @property
    def steps(self) -> int:
        """Progress steps: one per timed run (a concurrency round counts as one)."""
        count = 0
        if self.runs("full"):
            count += len(self.replies) * self.repeats
        if self.runs("tokens"):
            count += len(self.replies)
        if self.runs("cancel"):
            count += self.cancel_repeats
        if self.runs("concurrency"):
            count += len(self.concurrency) * self.rounds
        if self.runs("memory"):
            count += 1
        return count + len(self.capacity) * self.rounds

    def replies_for(self, connections: int, round_: int) -> list[Reply]:
        """A different reply for each connection of each round, in corpus order."""
        start = round_ * connections
        return [self.replies[(start + i) % len(self.replies)] for i in range(connections)]

    def as_dict(self) -> dict[str, object]:
        data = dataclasses.asdict(self)
        data["replies"] = [reply.name for reply in self.replies]
        return data
