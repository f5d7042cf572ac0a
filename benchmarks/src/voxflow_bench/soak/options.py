"""What ``voxflow soak`` runs: its sections and every count and duration, as one frozen object
(the CLI's flags fill it; the smoke test shrinks it)."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field

from voxflow_bench.corpus import Reply, load_corpus

__all__ = ["PROTOCOLS", "SOAK_SECTIONS", "SoakOptions", "short_texts"]

SOAK_SECTIONS = ("load", "capacity", "faults", "soak")
PROTOCOLS = ("native", "openai", "elevenlabs-ws", "elevenlabs-http")

# About five minutes of speech: a slow reader's answer keeps coming long after every socket
# buffer between it and the server is full.
# Twenty different sentences: the phrase cache keeps a sentence said twice, and a text that said
# one sentence twenty times would be mostly hits, rendered in no time.
SLOW_TEXT = " ".join(
    f"Part {n} of the story: the quick brown fox jumps over the lazy dog while the orchestra, "
    "tuning its instruments in the distance, prepares for a long evening of music that nobody "
    "will forget."
    for n in range(1, 21)
)


@dataclass(frozen=True)
class SoakOptions:
    replies: tuple[Reply, ...] = field(default_factory=load_corpus)
    sections: tuple[str, ...] = SOAK_SECTIONS
    playout_buffer_ms: float = 150.0
    seed: int | None = 1
    run_timeout_s: float = 120.0  # one request taking longer counts as an error ("timeout")
    backoff_s: float = 1.0  # a refused client waits this (the server's default hint), +-20%
    # -- load: unloaded TTFA, then twice the admission cap offered --
    protocols: tuple[str, ...] = ("native", "openai")  # the looping clients' mix, round robin
    unloaded_runs: int = 60  # p95 of 30 is the second-worst run: too noisy a baseline
    load_factor: float = 2.0
    load_s: float = 60.0
    stagger_s: float = 5.0  # looping clients start spread over this
    # -- capacity: N back-to-back streams, N stepped up, median of rounds --
    capacity_levels: tuple[int, ...] = (2, 3, 4, 5, 6, 8, 10, 12, 16, 20)
    capacity_rounds: int = 3
    capacity_round_s: float = 30.0
    ttfa_ratio_goal: float = 1.5  # loaded TTFA p95 / unloaded p95
    # -- faults, each while a light load streams --
    fault_streams: int = 2
    baseline_s: float = 5.0  # the light load alone, for reference
    probe_interval_s: float = 0.05
    idle_sockets: int = 500
    idle_hold_s: float = 12.0  # past the server's 10 s header timeout
    trickle_sockets: int = 1000
    trickle_s: float = 15.0
    vanishing_clients: int = 1000
    vanish_batch: int = 50
    slow_readers: int = 1  # per protocol
    slow_timeout_s: float = 45.0  # how long a slow reader waits to be closed
    wyoming: str | None = None  # tcp://host:port of the server's Wyoming listener, if it has one
    settle_s: float = 3.0  # after a fault, before the figures "after" are read
    # -- soak: many short mixed requests, resident size sampled between blocks --
    soak_requests: int = 10_000
    soak_concurrency: int = 0  # 0: the server's admission cap, so that nothing is refused
    soak_block: int = 1_000  # the resident size is read after every block
    soak_warmup: int = 1_000  # left out of the slope
    soak_text_chars: int = 16
    pid: int | None = None  # the server's pid, for its thread count if /metrics has none

    def __post_init__(self) -> None:
        if not self.replies:
            raise ValueError("the corpus has no replies")
        unknown = [s for s in self.sections if s not in SOAK_SECTIONS]
        if unknown or not self.sections:
            raise ValueError(f"sections must be among {', '.join(SOAK_SECTIONS)}, got {unknown}")
        bad = [p for p in self.protocols if p not in PROTOCOLS]
        if bad or not self.protocols:
            raise ValueError(f"protocols must be among {', '.join(PROTOCOLS)}, got {bad}")
        counts = (
            self.unloaded_runs,
            self.capacity_rounds,
            self.vanish_batch,
            self.soak_block,
            self.soak_text_chars,
        )
        if min(counts) < 1 or any(n < 1 for n in self.capacity_levels):
            raise ValueError("runs, rounds, batches, levels and blocks must be >= 1")
        sizes = (self.idle_sockets, self.trickle_sockets, self.vanishing_clients)
        if min((*sizes, self.slow_readers, self.fault_streams, self.soak_requests)) < 0:
            raise ValueError("socket, client, reader, stream and request counts must be >= 0")
        durations = (self.load_s, self.capacity_round_s, self.run_timeout_s, self.slow_timeout_s)
        if min(durations) <= 0 or self.probe_interval_s <= 0 or self.load_factor <= 0:
            raise ValueError("durations, the probe interval and the load factor must be > 0")
        if (
            min(self.stagger_s, self.idle_hold_s, self.trickle_s, self.settle_s, self.baseline_s)
            < 0
        ):
            raise ValueError("stagger, hold, trickle and settle times must be >= 0")
        if self.soak_concurrency < 0 or self.soak_warmup < 0 or self.backoff_s < 0:
            raise ValueError("soak_concurrency, soak_warmup and backoff_s must be >= 0")
        if self.playout_buffer_ms < 0:
            raise ValueError("playout_buffer_ms must be >= 0")

    def runs(self, section: str) -> bool:
        return section in self.sections

    def reply(self, client: int, turn: int) -> Reply:
        """Client ``client``'s ``turn``-th reply: clients walk the corpus from different
        places, so replies started together differ."""
        return self.replies[(client * 7 + turn) % len(self.replies)]

    def as_dict(self) -> dict[str, object]:
        data = dataclasses.asdict(self)
        data["replies"] = len(self.replies)
        return data


def short_texts(replies: tuple[Reply, ...], max_chars: int) -> tuple[str, ...]:
    """The soak's texts: each reply's opening words, up to ``max_chars`` at a word, ended as a
    sentence. Short, because 10,000 requests of whole replies would take hours on two cores,
    and a leak per request shows as well on short ones; varied, so every text path runs."""
    texts = []
    for reply in replies:
        words = reply.text.split()
        kept: list[str] = []
        for word in words:
            if kept and len(" ".join([*kept, word])) > max_chars:
                break
            kept.append(word)
        text = re.sub(r"[,;:]+$", "", " ".join(kept))
        texts.append(text if text.endswith((".", "?", "!")) else text + ".")
    return tuple(dict.fromkeys(texts))
