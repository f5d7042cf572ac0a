"""Checks shared by the framework tests: what voxflow must do for any framework that drives it.

Kept free of any framework import, so that each test file imports only its own framework.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import string
import time
import urllib.request
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
from loguru import logger  # Pipecat's logging (a dependency of pipecat-ai, not a framework)

# One reply the way an LLM streams it, and the next turn.
REPLY = (
    "The quick brown fox jumped over the lazy dog near the river bank. "
    "It was a bright and sunny morning in the quiet little village."
)
NEXT_REPLY = (
    "Then the dog woke up and chased the fox across the field. Everyone laughed at the sight."
)
# A long reply for barge-ins: about 40 s of speech, far more than voxflow renders ahead of
# playback (20 s), so a server that goes on rendering after a barge-in is seen doing so.
LONG_REPLY = " ".join(
    [
        "Let me walk you through the whole plan for your trip, step by step.",
        "First, you will take the early train from the central station to the coast.",
        "The ride takes about two hours, and the views along the way are lovely.",
        "When you arrive, a driver will be waiting for you outside the main entrance.",
        "He will take you straight to the hotel, where your room is already booked.",
        "In the afternoon you are free to walk along the beach or visit the old harbour.",
        "In the evening there is a dinner at a small restaurant near the lighthouse.",
        "The next morning you can join a boat tour that leaves right after breakfast.",
        "After lunch, the same driver brings you back to the station for the ride home.",
        "If anything changes along the way, just call the number on your ticket.",
    ]
)
# For a barge-in after the whole reply was sent: about 60 s of speech, so that when the reply
# ends (some 8 s of tokens) well over 20 s of it is still to render, paced to playback.
VERY_LONG_REPLY = (
    LONG_REPLY
    + " "
    + " ".join(
        [
            "Now, about the weather, which can change quickly on that part of the coast.",
            "Pack a light jacket and a good pair of shoes, because the paths are rocky.",
            "The museum near the harbour opens at ten and closes early on Sundays.",
            "There is a small market in the square every Saturday, with fresh fish and bread.",
            "If you like walking, the cliff path to the next village takes about an hour.",
            "The restaurant can also prepare a vegetarian menu if you tell them a day ahead.",
            "Your return ticket is valid on any train that day, so there is no need to rush.",
            "And finally, do not forget to charge your phone before you leave the hotel.",
            "I hope you have a wonderful time, and let me know if you need anything else.",
        ]
    )
)
FAST_TOKEN_INTERVAL_S = 0.01  # a fast LLM
TOKEN_INTERVAL_S = 0.025  # about what an LLM streams at

# Generous sanity bounds only: the figures themselves are collected and printed, not asserted.
FIRST_AUDIO_SANITY_S = 10.0
DURATION_TOLERANCE = 0.25


def llm_tokens(text: str) -> list[str]:
    """The text cut the way an LLM streams it: a word with its leading space, punctuation
    on its own, long words in pieces of a few characters."""
    tokens: list[str] = []
    for word in re.findall(r"\s*[A-Za-z0-9']+|\s*[^\sA-Za-z0-9']", text):
        rest = word
        while len(rest) > 6:
            tokens.append(rest[:4])
            rest = rest[4:]
        tokens.append(rest)
    assert "".join(tokens) == text
    return tokens


def first_sentence_end(text: str) -> int:
    """Index just past the first sentence's final punctuation."""
    match = re.search(r"[.!?]", text)
    assert match, text
    return match.end()


def words_of(text: str) -> list[str]:
    """A text's words as timings name them: split at white space, without the punctuation
    around them, lower case ("bank.It" stays one word, so text spoken without the space
    between two sentences shows)."""
    words = (w.strip(string.punctuation + "\u2014\u2013").lower() for w in text.split())
    return [w for w in words if w]


# --- audio --------------------------------------------------------------------------------


def pcm_seconds(pcm: bytes, sample_rate: int) -> float:
    return len(pcm) / 2 / sample_rate


def assert_audible(pcm: bytes, what: str) -> None:
    """Audio came, and it is not silence."""
    assert len(pcm) >= 2, f"{what}: no audio came"
    samples = np.frombuffer(pcm[: len(pcm) // 2 * 2], dtype="<i2").astype(np.float64)
    rms = float(np.sqrt(np.mean(samples**2)))
    assert rms > 100.0, f"{what}: audio is silent (RMS {rms:.1f} of 32768)"


_reference_cache: dict[str, float] = {}


def reference_seconds(base_url: str, text: str) -> float:
    """How long voxflow's own rendering of `text` is: its OpenAI endpoint, PCM 24 kHz s16."""
    if text in _reference_cache:
        return _reference_cache[text]
    body = json.dumps(
        {"model": "tts-1", "voice": "alloy", "input": text, "response_format": "pcm"}
    ).encode()
    request = urllib.request.Request(
        f"{base_url}/v1/audio/speech",
        data=body,
        headers={"content-type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        pcm = response.read()
    seconds = pcm_seconds(pcm, 24000)
    _reference_cache[text] = seconds
    return seconds


async def assert_duration_like_reference(
    base_url: str, text: str, got_s: float, what: str, tolerance: float = DURATION_TOLERANCE
) -> None:
    """The audio a framework got for `text` lasts as long as voxflow's own rendering of it
    (within the tolerance: each rendering draws its own durations unless seeded)."""
    ref_s = await asyncio.to_thread(reference_seconds, base_url, text)
    ratio = got_s / ref_s if ref_s else float("inf")
    assert abs(ratio - 1.0) <= tolerance, (
        f"{what}: {got_s:.2f} s of audio for {len(text)} characters, voxflow's own rendering "
        f"is {ref_s:.2f} s (ratio {ratio:.2f}, allowed 1±{tolerance})"
    )


# --- word timings -------------------------------------------------------------------------


def assert_word_timings(timed: Sequence[tuple[str, float]], text: str, what: str) -> None:
    """Word timings (word, start) cover the text's words, in order, and move forward."""
    starts = [t for _, t in timed]
    backwards = [
        (timed[i - 1], timed[i]) for i in range(1, len(timed)) if timed[i][1] < timed[i - 1][1]
    ]
    assert not backwards, f"{what}: word timings go backwards: {backwards[:5]} (all: {timed})"
    # Two words never start at the same moment: the second one's time is wrong (a sentence
    # glued to the one before it, "bank.It", comes out like that in Pipecat's timings).
    same = [
        (timed[i - 1], timed[i]) for i in range(1, len(timed)) if timed[i][1] == timed[i - 1][1]
    ]
    assert not same, f"{what}: words timed at the same moment: {same[:5]} (all: {timed})"
    got = [w for word, _ in timed for w in words_of(word)]
    want = words_of(text)
    assert got == want, (
        f"{what}: timed words differ from the text's words\n"
        f"  timed: {[word for word, _ in timed]}\n  text:  {want}"
    )
    assert starts == sorted(starts)


def words_from_characters(chars: Sequence[str], starts: Sequence[float]) -> list[tuple[str, float]]:
    """ElevenLabs' character alignment as (word, start) pairs: a word starts at its first
    character that is not a space."""
    assert len(chars) == len(starts), f"{len(chars)} characters, {len(starts)} start times"
    words: list[tuple[str, float]] = []
    current, start = "", 0.0
    for ch, t in zip(chars, starts, strict=True):
        if ch.isspace():
            if current:
                words.append((current, start))
            current = ""
            continue
        if not current:
            start = t
        current += ch
    if current:
        words.append((current, start))
    return words


# --- first audio figures ------------------------------------------------------------------


@dataclass
class FirstAudio:
    framework: str
    scenario: str
    seconds: float


FIRST_AUDIO: list[FirstAudio] = []
# What a run observed and does not assert (shown in the summary): see each call's comment.
NOTES: list[str] = []


def record_first_audio(framework: str, scenario: str, seconds: float | None) -> None:
    """The time from the end of the first sentence's tokens to the first audio: collected
    for the summary, with only a sanity bound."""
    assert seconds is not None, f"{framework} {scenario}: no audio came"
    FIRST_AUDIO.append(FirstAudio(framework, scenario, seconds))
    assert seconds < FIRST_AUDIO_SANITY_S, f"{framework} {scenario}: first audio took {seconds} s"


# --- metrics ------------------------------------------------------------------------------


def read_metrics(base_url: str) -> dict[str, float]:
    """voxflow's /metrics: each series summed over its labels."""
    with urllib.request.urlopen(f"{base_url}/metrics", timeout=10) as response:
        text = response.read().decode()
    values: dict[str, float] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        name_labels, _, value = line.rpartition(" ")
        name = name_labels.split("{", 1)[0]
        try:
            values[name] = values.get(name, 0.0) + float(value)
        except ValueError:
            continue
    return values


async def metrics(base_url: str) -> dict[str, float]:
    return await asyncio.to_thread(read_metrics, base_url)


async def wait_server_idle(base_url: str, timeout_s: float = 30.0) -> None:
    """Before a barge-in scenario: nothing of an earlier scenario still renders."""
    deadline = time.monotonic() + timeout_s
    while True:
        m = await metrics(base_url)
        if m.get("voxflow_active_contexts", 0) == 0 and m.get("voxflow_busy_workers", 0) == 0:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"server still busy before the scenario: {m}")
        await asyncio.sleep(0.1)


@dataclass
class RenderStop:
    active_contexts: float
    jobs_after_settle: float
    waited_s: float


async def assert_rendering_stops(
    base_url: str, what: str, settle_s: float = 5.0, quiet_s: float = 1.5
) -> RenderStop:
    """After a barge-in the server stops rendering: within `settle_s` no context is active
    any more, and then no synthesis job runs for `quiet_s`."""
    started = time.monotonic()
    before = await metrics(base_url)
    while True:
        m = await metrics(base_url)
        if m.get("voxflow_active_contexts", 0) == 0:
            break
        if time.monotonic() - started > settle_s:
            jobs = m.get("voxflow_jobs_total", 0) - before.get("voxflow_jobs_total", 0)
            raise AssertionError(
                f"{what}: the server still renders {settle_s:.0f} s after the barge-in "
                f"(voxflow_active_contexts {m.get('voxflow_active_contexts')}, "
                f"{jobs:.0f} synthesis jobs run since)"
            )
        await asyncio.sleep(0.1)
    waited = time.monotonic() - started
    # At most the windows in flight at the cancel finish (their audio is dropped).
    await asyncio.sleep(0.5)
    jobs_then = (await metrics(base_url)).get("voxflow_jobs_total", 0)
    await asyncio.sleep(quiet_s)
    later = await metrics(base_url)
    grown = later.get("voxflow_jobs_total", 0) - jobs_then
    assert grown == 0, f"{what}: {grown:.0f} synthesis jobs ran after the barge-in had settled"
    return RenderStop(later.get("voxflow_active_contexts", 0), grown, waited)


# --- logs ---------------------------------------------------------------------------------


@dataclass
class LogCapture:
    """Warnings and errors the frameworks log: through `logging` (LiveKit, the SDKs) and
    loguru (Pipecat)."""

    records: list[str] = field(default_factory=list)
    ignore: list[re.Pattern[str]] = field(default_factory=list)
    _handler: logging.Handler | None = None
    _loguru_id: int | None = None

    def start(self) -> None:
        capture = self

        class _Handler(logging.Handler):
            def emit(self, record: logging.LogRecord) -> None:
                extra = {
                    k: v
                    for k, v in record.__dict__.items()
                    if k not in logging.LogRecord("", 0, "", 0, "", (), None).__dict__
                    and k not in ("message", "asctime")
                }
                message = f"{record.levelname} {record.name}: {record.getMessage()}"
                if extra:
                    message += f" {extra}"
                if record.exc_info and record.exc_info[1] is not None:
                    message += f" [{record.exc_info[1]!r}]"
                capture._add(message)

        self._handler = _Handler(level=logging.WARNING)
        logging.getLogger().addHandler(self._handler)
        self._loguru_id = logger.add(
            lambda m: self._add(
                f"{m.record['level'].name} {m.record['name']}: {m.record['message']}"
            ),
            level="WARNING",
        )

    def stop(self) -> None:
        if self._handler is not None:
            logging.getLogger().removeHandler(self._handler)
            self._handler = None
        if self._loguru_id is not None:
            logger.remove(self._loguru_id)
            self._loguru_id = None

    def _add(self, message: str) -> None:
        if not any(p.search(message) for p in self.ignore):
            self.records.append(message)

    def assert_clean(self, what: str) -> None:
        assert not self.records, f"{what}: the framework logged warnings or errors:\n" + "\n".join(
            f"  {r}" for r in self.records
        )


def join_pcm(chunks: Iterable[bytes]) -> bytes:
    return b"".join(chunks)


class Checks:
    """Runs every check of a scenario and fails once at the end with all that failed, so one
    known bug does not hide the others."""

    def __init__(self, what: str) -> None:
        self.what = what
        self.failures: list[str] = []

    @contextmanager
    def check(self, name: str) -> Iterator[None]:
        try:
            yield
        except AssertionError as e:
            self.failures.append(f"[{name}] {e}")

    def done(self) -> None:
        assert not self.failures, f"{self.what}: {len(self.failures)} check(s) failed:\n" + (
            "\n".join(self.failures)
        )
