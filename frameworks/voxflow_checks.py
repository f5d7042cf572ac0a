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
from typing import Any

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
# Replies with a long sentence among short ones (issue 38): the audio in hand after the opener
# and the long sentence runs well past 3 s while the sentences after it are still to be
# rendered. A server that holds those back until shortly before the listener runs dry leaves
# the connection quiet for more than Pipecat's `stop_frame_timeout_s` (3 s), and Pipecat then
# ends the context and drops the rest: the last sentence (the question) is never heard. Several
# shapes, so that what passes is not tuned to one text. Each long sentence is some 9 s of
# speech with no comma (nothing to split it at), the whole reply some 11 to 14 s.
LONG_SENTENCE_REPLIES: dict[str, str] = {
    # an opener, the long sentence, a question
    "question": (
        "Sure thing! I found a table for two at the little Italian place on the corner of "
        "Fifth Street and Main that has a quiet window seat overlooking the park and the old "
        "stone fountain at seven tonight. Would you like me to book it for you?"
    ),
    # numbers and times, read out as words but timed as written ("7:15")
    "numbers": (
        "Okay, here is what I found. Your flight leaves from gate 42 at 7:15 in the morning "
        "and lands in Denver at 10:30 local time after a short stop in Chicago where you stay "
        "on the same plane for the whole trip. Your seat is 14 by the window. Shall I send "
        "the details to your phone?"
    ),
    # four sentences: two short ones after the long one
    "four sentences": (
        "Got it. The package you ordered last Tuesday left our warehouse early this morning "
        "and is now on a truck headed for the sorting center just outside your town where it "
        "will wait for the evening delivery run. It should reach your door tomorrow before "
        "noon. Do you want a text message when it arrives?"
    ),
}
FAST_TOKEN_INTERVAL_S = 0.01  # a fast LLM
TOKEN_INTERVAL_S = 0.025  # about what an LLM streams at

# Generous sanity bounds only: the figures themselves are collected and printed, not asserted.
FIRST_AUDIO_SANITY_S = 10.0
# The longest a reply's audio may pause on the wire, once it has started, before it has all
# come: Pipecat's TTSService ends an audio context that has been quiet this long
# (`stop_frame_timeout_s`, 3.0 s in pipecat-ai 1.14) and drops what comes after. The behaviour
# under test, not a timing goal (voxflow's own goal is tighter and is a benchmark figure).
QUIET_LIMIT_S = 3.0
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


def sentences_of(text: str) -> list[str]:
    """A text's sentences: cut after each ".", "!" or "?" that ends a word."""
    return [s for s in re.split(r"(?<=[.!?])\s+", text.strip()) if s]


def assert_every_sentence_timed(
    timed: Sequence[tuple[str, float]], text: str, what: str, *, word_by_word: bool = True
) -> None:
    """Each sentence's words are among the timed words, in order: names the first sentence
    that was not (all) heard, which says more than the whole word lists do when a reply's
    end is cut off. `word_by_word` (a service that times each word): each of its words timed
    on its own, for an entry with several words in it is text the framework pushed without
    timings, as Pipecat does with the text of a context it timed out ("force-completing")."""
    got: list[str] = []
    entry_of: list[int] = []  # for each of `got`, the index of its entry in `timed`
    for index, (word, _) in enumerate(timed):
        for w in words_of(word):
            got.append(w)
            entry_of.append(index)
    sentences = sentences_of(text)
    at = 0
    for number, sentence in enumerate(sentences, start=1):
        want = words_of(sentence)
        heard = got[at : at + len(want)]
        if heard != want:
            raise AssertionError(
                f"{what}: sentence {number} of {len(sentences)} was not heard whole "
                f"({len(got)} of {len(words_of(text))} words timed): {sentence!r}; "
                f"timed there: {heard}"
            )
        lumped = sorted(
            {timed[i][0] for i in entry_of[at : at + len(want)] if len(words_of(timed[i][0])) > 1}
        )
        if word_by_word and lumped:
            raise AssertionError(
                f"{what}: sentence {number} of {len(sentences)} was not timed word by word: "
                f"{lumped} came as one entry (text pushed untimed, not heard)"
            )
        at += len(want)


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


@dataclass
class LongestQuiet:
    framework: str
    scenario: str
    seconds: float
    between: str  # what the quiet lay between, e.g. "audio 3.41 s and 7.02 s in"


LONGEST_QUIET: list[LongestQuiet] = []


def longest_quiet(arrivals: Sequence[float]) -> tuple[float, int]:
    """The longest time between consecutive arrivals, and the index of the arrival that
    ended it (0 when there are fewer than two)."""
    best, index = 0.0, 0
    for i in range(1, len(arrivals)):
        if arrivals[i] - arrivals[i - 1] > best:
            best, index = arrivals[i] - arrivals[i - 1], i
    return best, index


def record_longest_quiet(
    framework: str, scenario: str, audio_at: Sequence[float], end_at: float | None
) -> None:
    """The longest silence on the wire during a reply, as the framework received it: between
    consecutive audio frames from the first to the last, and from the last to the frame that
    ends the turn (`end_at`, when it came: audio Pipecat drops after its timeout never reaches
    the collector, so the wait for the end is where that timeout shows). Collected for the
    summary, and asserted below QUIET_LIMIT_S, the quiet after which Pipecat gives up."""
    assert audio_at, f"{framework} {scenario}: no audio came"
    arrivals = [*audio_at, end_at] if end_at is not None else list(audio_at)
    seconds, index = longest_quiet(arrivals)
    since = [t - audio_at[0] for t in arrivals]
    if index == len(audio_at):
        between = f"the last audio {since[index - 1]:.2f} s in and the turn's end"
    elif index:
        between = f"audio {since[index - 1]:.2f} s and {since[index]:.2f} s in"
    else:
        between = "one audio frame"
    LONGEST_QUIET.append(LongestQuiet(framework, scenario, seconds, between))
    assert seconds < QUIET_LIMIT_S, (
        f"{framework} {scenario}: the audio paused {seconds:.2f} s (between {between}), "
        f"past the {QUIET_LIMIT_S:.1f} s after which Pipecat ends the context"
    )


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
    # Messages below WARNING that a scenario looks for (`watch`): what a framework logs at
    # DEBUG or TRACE when it works round a server, e.g. Pipecat ending a quiet audio context.
    watched: list[str] = field(default_factory=list)
    _handler: logging.Handler | None = None
    _loguru_id: int | None = None
    _watch_ids: list[int] = field(default_factory=list)

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

    def watch(self, patterns: Sequence[re.Pattern[str]]) -> None:
        """Also collect loguru messages at any level (TRACE up) that match one of `patterns`,
        until `stop`. Only those: a sink that formatted every DEBUG line would slow the
        pipeline it watches."""

        def _matches(record: dict[str, Any]) -> bool:
            return any(p.search(record["message"]) for p in patterns)

        self._watch_ids.append(
            logger.add(
                lambda m: self.watched.append(
                    f"{m.record['level'].name} {m.record['name']}: {m.record['message']}"
                ),
                level="TRACE",
                filter=_matches,
            )
        )

    def assert_not_watched(self, what: str) -> None:
        assert not self.watched, f"{what}: the framework logged:\n" + "\n".join(
            f"  {r}" for r in self.watched
        )

    def stop(self) -> None:
        for watch_id in self._watch_ids:
            logger.remove(watch_id)
        self._watch_ids.clear()
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
