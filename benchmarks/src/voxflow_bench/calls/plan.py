"""What each call of the calls benchmark does, turn after turn: seeded, so a level is repeatable.

A call is a conversation. Each *turn* is an agent reply streamed as an LLM streams it
(``voxflow_bench.tokens``: about four characters a token at ``token_rate`` a second, with a
little jitter), sometimes with a pause mid-reply (the LLM waits on a tool or the network); the
listener plays the audio at real time from its first chunk; then the caller speaks for
``caller_speech_s`` before the next turn. A share of the turns is barged in: the caller starts
speaking after hearing part of the reply, and the client cancels it.

Arrivals are open-loop in the sense that matters for load: a call's next turn is due a drawn
time after the caller stops speaking, whatever the server does, and calls' first turns arrive
as a Poisson process over ``first_turn_spread_s``. ``burstiness`` is the share of turns whose
start snaps to the next shared instant (every ``burst_period_s``), so that many calls start
replies at the same moment: 0 is independent arrivals, 1 every turn in lockstep.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

from voxflow_bench.corpus import Reply
from voxflow_bench.tokens import llm_tokens

__all__ = ["CallPattern", "CallScript", "TokenAt", "TurnPlan", "snap"]

# Where an LLM pauses mid-reply: after a sentence or clause mark that ends a word, Japanese ones
# too (a Japanese reply, replies-ja.tsv, has no ASCII marks and no spaces). A mark inside a word,
# a time's colon (6:15) or an abbreviation's or a number's point (a.m., 2.5), is no place to
# stop: a pause there would hold the half-written word, and count the LLM's wait as the
# server's first audio.
_PAUSE_AFTER = (".", "!", "?", ",", ";", ":")
_PAUSE_AFTER_UNSPACED = ("。", "、", "？", "！")


@dataclass(frozen=True)
class CallPattern:
    """How calls behave (see the module docstring)."""

    token_rate: float = 50.0
    token_jitter: float = 0.5  # each token interval is uniform in (1 -+ jitter) / rate
    caller_speech_s: tuple[float, float] = (1.5, 4.0)
    barge_in_share: float = 0.15
    barge_in_after_s: tuple[float, float] = (0.8, 3.0)  # audio heard before the caller speaks
    llm_pause_share: float = 0.3  # of replies that pause once mid-reply (after punctuation)
    llm_pause_s: tuple[float, float] = (0.2, 0.8)
    burstiness: float = 0.0
    burst_period_s: float = 2.0
    first_turn_spread_s: float = 4.0
    seed: int = 1

    def __post_init__(self) -> None:
        if self.token_rate <= 0 or not 0 <= self.token_jitter < 1:
            raise ValueError("token_rate must be > 0 and token_jitter within [0, 1)")
        for name in ("barge_in_share", "llm_pause_share", "burstiness"):
            if not 0 <= getattr(self, name) <= 1:
                raise ValueError(f"{name} must be within [0, 1]")
        for name in ("caller_speech_s", "barge_in_after_s", "llm_pause_s"):
            low, high = getattr(self, name)
            if not 0 <= low <= high:
                raise ValueError(f"{name} must be (low, high) with 0 <= low <= high")
        if self.burst_period_s <= 0 or self.first_turn_spread_s < 0:
            raise ValueError("burst_period_s must be > 0 and first_turn_spread_s >= 0")

    def as_dict(self) -> dict[str, object]:
        return {
            "token_rate": self.token_rate,
            "token_jitter": self.token_jitter,
            "caller_speech_s": list(self.caller_speech_s),
            "barge_in_share": self.barge_in_share,
            "barge_in_after_s": list(self.barge_in_after_s),
            "llm_pause_share": self.llm_pause_share,
            "llm_pause_s": list(self.llm_pause_s),
            "burstiness": self.burstiness,
            "burst_period_s": self.burst_period_s,
            "first_turn_spread_s": self.first_turn_spread_s,
            "seed": self.seed,
        }


@dataclass(frozen=True)
class TokenAt:
    """A token and when it is sent, in seconds from the turn's first token."""

    at_s: float
    text: str


@dataclass(frozen=True)
class TurnPlan:
    reply: Reply
    tokens: tuple[TokenAt, ...]
    barge_in_after_s: float | None  # audio heard before the caller barges in (None: never)
    caller_speech_s: float  # the caller speaks this long after the turn, before the next one
    llm_pause_s: float  # the mid-reply pause this turn has (0: none)
    pause_after: int = -1  # the token the pause follows (-1: none)

    @property
    def text(self) -> str:
        return self.reply.text


def snap(at_s: float, period_s: float) -> float:
    """The first shared instant at or after ``at_s`` (multiples of ``period_s``)."""
    return math.ceil(at_s / period_s - 1e-9) * period_s


class CallScript:
    """The turns of call number ``index``: the same for the same pattern, replies and index."""

    def __init__(self, index: int, pattern: CallPattern, replies: Sequence[Reply]) -> None:
        if not replies:
            raise ValueError("a call needs replies to speak")
        self._pattern = pattern
        self._replies = replies
        self._rng = random.Random(f"{pattern.seed}:{index}")
        self.first_turn_s = self._rng.uniform(0.0, pattern.first_turn_spread_s)

    def next_turn(self) -> TurnPlan:
        p, rng = self._pattern, self._rng
        reply = self._replies[rng.randrange(len(self._replies))]
        pieces = llm_tokens(reply.text)
        pause_after = -1
        pause_s = 0.0
        if rng.random() < p.llm_pause_share:
            places = [i for i in range(len(pieces) - 1) if _ends_a_clause(pieces, i)]
            if places:
                pause_after = rng.choice(places)
                pause_s = rng.uniform(*p.llm_pause_s)
        tokens: list[TokenAt] = []
        at = 0.0
        for i, piece in enumerate(pieces):
            tokens.append(TokenAt(at, piece))
            at += rng.uniform(1 - p.token_jitter, 1 + p.token_jitter) / p.token_rate
            if i == pause_after:
                at += pause_s
        barge = None
        if rng.random() < p.barge_in_share:
            barge = rng.uniform(*p.barge_in_after_s)
        speech = rng.uniform(*p.caller_speech_s)
        return TurnPlan(reply, tuple(tokens), barge, speech, pause_s, pause_after)

    def start_at(self, ready_s: float) -> float:
        """When a turn that may start from ``ready_s`` (seconds into the level) starts: then,
        or at the next shared instant for a ``burstiness`` share of turns."""
        if self._rng.random() < self._pattern.burstiness:
            return snap(ready_s, self._pattern.burst_period_s)
        return ready_s


def _ends_a_clause(pieces: Sequence[str], index: int) -> bool:
    """Whether token ``index`` (not the last) ends with a mark that ends a word."""
    token = pieces[index].rstrip()
    if token.endswith(_PAUSE_AFTER_UNSPACED):
        return True
    follows = pieces[index + 1]
    spaced = pieces[index] != token or follows[:1].isspace()
    return token.endswith(_PAUSE_AFTER) and spaced
