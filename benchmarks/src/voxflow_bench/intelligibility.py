"""Intelligibility: does a recogniser that hears like a listener understand each rendering?

The recogniser is Whisper base (OpenAI's weights, MIT) on CTranslate2 through faster-whisper,
int8 on the CPU, loaded from a local model directory that ``voxflow_bench.whisper_model``
assembles once from the two packages of the ``intelligibility`` extra: nothing is downloaded.
It transcribes in the voice's language (``language="en"`` for an English voice, ``"ja"`` for a
Japanese one: ``language_of`` its locale as the registry lists it), greedily (``temperature=0``,
``BEAM_SIZE`` 1), each rendering whole, with no voice activity filter that could drop speech.

Each text is spoken through ``LocalSpeaker``, the server's own path, once per rendering
(``RENDERINGS``), each on its own speaker on the one engine, with the same settings (seed 1),
and comes out at 16 kHz, resampled by the server's resampler as a client asking for
``pcm_16000`` gets it:

- *whole*: sentence by sentence, each sentence rendered in one run and joined by the server's
  seams (``voxflow say --chunking sentence --no-stream``): the baseline of local TTS servers.
- *windows*: sentence by sentence as *whole*, streamed in the smallest windows the scheduler
  renders (16 frames, then 32 each: ``SMALLEST_WINDOWS``) and no lead: what the windows alone
  cost, which for Piper is nothing (the whole render to within rounding) and for Kokoro is what
  its running normalisation does (docs/kokoro.md). Kokoro's first window is its own (24
  frames), and a Kokoro stream with little audio in hand by its learnt costs gets 16-frame
  windows, so its figure follows the speaker's history.
- *streamed*: the text in one message, with the server's default chunking, leads and windows:
  what ``voxflow say`` and the HTTP endpoints render.
- *tokens*: the text as LLM tokens at ``token_rate`` a second (``tokens.paced``), as the
  native WebSocket gets a reply: the leads, their takeovers and the cuts made while the text
  runs dry, on top of the windows.
- *word*: with word chunking (``voxflow say --chunking word``): segments of six words
  (``ChunkingConfig.words_per_chunk``), each rendered on its own and joined by the seams.
- *word1*: one word a segment (``voxflow say --chunking word --schedule 1``), each word rendered
  on its own: the known-bad anchor, what a recogniser makes of speech cut at every word.

Each transcript is scored against the text in its language (``Scoring``):

- English by word error rate, after both are put in the same spoken words (``spoken_words``):
  the server's own normaliser (``voxflow.Normalizer``) writes numbers, money, dates and times
  out ("$86.40" and "86 dollars and 40 cents" both become "eighty-six dollars and forty
  cents"), then case, punctuation and hyphens go and apostrophes are made straight. Letters
  said one by one are one word, and the normaliser's name for the letter A ("eigh", so that it
  is not said as the article) is the letter again: the normaliser spells a word in capitals
  out, so case would count otherwise, as "case off" forbids (Whisper's "HUM", a stressed
  "Hmm", three words against "Hum"'s one; "U A-1482" against "UA 1482", "AM" against "a.m.").
- Japanese by character error rate on kana readings (``voxflow_bench.kana``): both texts as
  the katakana of what is said (pyopenjtalk's reading, so that 3,000円, 三千円 and さんぜんえん
  compare equal), punctuation and vowel length dropped; errors per kana of the reference.

A Japanese voice's text goes every path as it is written: the session reads it by the voice's
locale (Japanese sentence, clause and word boundaries, so that word chunking cuts it at its
phrases; the Japanese normaliser). Only its LLM tokens differ: one to three characters
(``tokens.japanese_tokens``), as Japanese has no spaces to carry a word.
"""

from __future__ import annotations

import itertools
import logging
import os
import re
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

import numpy as np
import numpy.typing as npt
from faster_whisper import WhisperModel

from voxflow import (
    ChunkingConfig,
    Engine,
    LocalSpeaker,
    Normalizer,
    SchedulerSettings,
    SessionConfig,
    StartOptions,
    Strategy,
    VoiceSettings,
)
from voxflow_bench import kana, whisper_model
from voxflow_bench.corpus import Reply
from voxflow_bench.edit_distance import edit_distance
from voxflow_bench.prosody.render import reference_speaker, streamed_speaker
from voxflow_bench.stats import PairedDifference
from voxflow_bench.tokens import llm_tokens, paced

__all__ = [
    "BEAM_SIZE",
    "LOOP_BEAM_SIZE",
    "LOOP_COMPRESSION_RATIO",
    "RECOGNISER_FORMAT",
    "RENDERINGS",
    "RENDERING_HELP",
    "SCORINGS",
    "SENTENCES",
    "SETTINGS",
    "SMALLEST_WINDOWS",
    "Heard",
    "IntelligibilityReport",
    "Scoring",
    "SentenceResult",
    "Speakers",
    "Transcriber",
    "compare",
    "compare_replies",
    "language_of",
    "looped",
    "scored",
    "spoken_words",
    "word_error_rate",
    "word_errors",
]

log = logging.getLogger(__name__)

RECOGNISER_RATE = 16000
RECOGNISER_FORMAT = f"pcm_{RECOGNISER_RATE}"
SETTINGS = VoiceSettings(seed=1)

# Greedy decoding, not faster-whisper's default beam of 5: on the built-in sentences (bundled
# voice) beam 5 took 16% longer for the whole run, heard whole renderings no better (3 errors in
# 174 words either way), and used its language model to repair speech cut at every word (the
# known-bad anchor: 15 errors against greedy's 39), hiding what the bench is there to show;
# it also ended one sentence early ("is there anything else I can?"). docs/benchmarks.md.
BEAM_SIZE = 1
LOOP_BEAM_SIZE = 5  # a decode that looped is done again with this beam (``Transcriber``)
LOOP_COMPRESSION_RATIO = 2.4  # Whisper's compression-ratio threshold of a failed decode

RENDERINGS: tuple[str, ...] = ("whole", "windows", "streamed", "tokens", "word", "word1")
RENDERING_HELP: Mapping[str, str] = {
    "whole": "sentence by sentence, each in one run (say --chunking sentence --no-stream)",
    "windows": "sentence by sentence in the smallest windows, no lead",
    "streamed": "the text in one message, as say and HTTP render it (default chunking)",
    "tokens": "LLM tokens at --token-rate a second, as the native WebSocket gets them",
    "word": "six words a segment (say --chunking word)",
    "word1": "one word a segment (say --chunking word --schedule 1): the known-bad anchor",
}

# What a voice agent says: appointments, orders, weather, apologies. No digits or abbreviations,
# short and long clauses, and one long clause without commas.
SENTENCES: tuple[str, ...] = (
    "Good morning, how can I help you today?",
    "Your appointment is confirmed for Tuesday morning.",
    "Let me check that for you.",
    "I'm sorry, but that order has already shipped.",
    "The weather tomorrow will be sunny with a light breeze.",
    "Please hold while I look up your account.",
    "Your package should arrive by the end of the week.",
    "Would you like me to book a table for two people tonight?",
    "It will rain in the afternoon, so please bring an umbrella.",
    "Thank you for waiting, I found your reservation.",
    "The doctor can see you next Monday afternoon if you arrive a few minutes early to fill "
    "out the new patient forms at the front desk.",
    "I apologize for the delay, and I will transfer you to a manager right away.",
    "Your refund has been processed and should appear on your card within five business days.",
    "Unfortunately, the store is closed on Sunday.",
    "I have cancelled the old order and placed a new one with express delivery.",
    "Is there anything else I can help you with?",
)

_NORMALIZER = Normalizer()
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'"})
# Whisper writes "two thirty p m" as "230 pm" and "at three fifteen" as "at 3.15": put the colon
# back, so that the normaliser reads a time, not "two hundred thirty" or "three point one five".
_CLOCK_WITHOUT_COLON = re.compile(r"\b(1[0-2]|0?[1-9])([0-5][0-9])(\s*[ap]\.?\s?m\b)", re.I)
_CLOCK_WITH_DOT = re.compile(r"\b(at (?:1[0-2]|0?[1-9]))\.([0-5][0-9])\b(?![.,]?[0-9])", re.I)
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z0-9]+)*")
# Spellings Whisper writes either way, counted as one word.
_SPELLINGS = {"canceled": "cancelled", "apologise": "apologize", "okay": "ok"}
# The normaliser writes the letter A of a spelled-out code as "eigh" (so that it is not said as
# the article): a letter again here, as Whisper writes it.
_LETTER_NAMES = {"eigh": "a"}


def spoken_words(text: str) -> list[str]:
    """``text`` as the words a listener hears: numbers, money, dates and times written out by
    the server's normaliser, then lower case, punctuation and hyphens dropped (apostrophes
    inside a word kept, curly ones made straight), letters said one by one made one word, a few
    spelling variants made one."""
    text = _CLOCK_WITHOUT_COLON.sub(r"\1:\2\3", text.translate(_APOSTROPHES))
    text = _CLOCK_WITH_DOT.sub(r"\1:\2", text)
    words = _WORD.findall(_NORMALIZER.normalize(text).text.lower())
    letters = [_LETTER_NAMES.get(word, word) for word in words]
    return [_SPELLINGS.get(word, word) for word in _join_letters(letters)]


def _join_letters(words: list[str]) -> list[str]:
    """``words`` with each run of two or more single letters made one word ("u p s": "ups")."""
    joined: list[str] = []
    for letters, group in itertools.groupby(words, key=lambda w: len(w) == 1 and w.isalpha()):
        run = list(group)
        joined.extend(["".join(run)] if letters and len(run) > 1 else run)
    return joined


def word_errors(reference: str, hypothesis: str) -> tuple[int, int]:
    """Word-level edit distance (substitutions + deletions + insertions) and the number of
    reference words, both texts as ``spoken_words``."""
    ref = spoken_words(reference)
    return edit_distance(ref, spoken_words(hypothesis)), len(ref)


def word_error_rate(reference: str, hypothesis: str) -> float:
    """Word errors per reference word (above 1 when the hypothesis inserts many words)."""
    errors, words = word_errors(reference, hypothesis)
    if words == 0:
        raise ValueError("the reference has no words")
    return errors / words


@dataclass(frozen=True)
class Scoring:
    """How transcripts of one language are scored: the rate's name (``metric``), what it counts
    (``unit``, per reference unit), and ``errors`` (edit distance against the reference, and
    the reference's units)."""

    language: str  # Whisper's language code
    metric: str  # "WER", "CER"
    unit: str  # "words", "kana"
    errors: Callable[[str, str], tuple[int, int]]


SCORINGS: Mapping[str, Scoring] = {
    "en": Scoring("en", "WER", "words", word_errors),
    "ja": Scoring("ja", "CER", "kana", kana.kana_errors),
}


def language_of(locale: str) -> str:
    """The language of a voice's locale (``VoiceInfo.language``, as ``voxflow voices`` lists it:
    ``en_US``, ``ja_JP``), as Whisper and ``SCORINGS`` name it; ``ValueError`` for a language
    the bench cannot score."""
    language = locale.replace("-", "_").split("_")[0].strip().lower()
    if language not in SCORINGS:
        spoken = ", ".join(SCORINGS)
        raise ValueError(
            f"bench-intelligibility scores {spoken}, not a voice of {locale or 'no language'}"
        )
    return language


class Transcriber:
    """Whisper base through faster-whisper: CTranslate2, int8, on the CPU, from the local model
    directory (``whisper_model.model_dir``, assembled from the installed packages on first use).

    ``transcribe`` decodes with ``temperature=0`` (no sampling fallback), the language it is
    told (not detected: a misdetection would score a language's speech as another's),
    ``beam_size`` (``BEAM_SIZE``), no voice activity filter, and no conditioning on an earlier
    text: a transcript depends on its audio alone. Calls from several threads take turns.

    A greedy decode can fall into a loop, one word written over and over to the end of the
    window whatever the audio says (``looped``): a failure of the decoder, not of the speech,
    which Whisper's own transcribe answers by decoding again. This one decodes again too, still
    at temperature 0 so the transcript stays a function of the audio, with a beam of
    ``LOOP_BEAM_SIZE`` (measured: a jf_nezumi stream heard as 大きい forty times greedily was
    heard word for word with a beam of 5).
    """

    def __init__(
        self,
        directory: Path | None = None,
        beam_size: int = BEAM_SIZE,
        threads: int | None = None,
    ) -> None:
        if beam_size < 1:
            raise ValueError(f"the beam size must be at least 1, got {beam_size}")
        self.directory = whisper_model.model_dir() if directory is None else directory
        self.beam_size = beam_size
        self._model = WhisperModel(
            str(self.directory),  # a local directory: faster-whisper never asks the hub
            device="cpu",
            compute_type="int8",
            cpu_threads=threads if threads is not None else min(4, os.cpu_count() or 1),
            local_files_only=True,
        )

    @property
    def description(self) -> str:
        return (
            f"Whisper base (faster-whisper {version('faster-whisper')}, CTranslate2 "
            f"{version('ctranslate2')}, int8, beam {self.beam_size})"
        )

    def transcribe(self, audio: npt.NDArray[np.float32], language: str = "en") -> str:
        """The recognised text of mono float ``audio`` at 16 kHz in ``language`` (Whisper's
        code: ``en``, ``ja``), as Whisper writes it."""
        text = self._decode(audio, language, self.beam_size)
        if looped(text) and self.beam_size < LOOP_BEAM_SIZE:
            log.info("a greedy decode looped (%r...): decoding with a beam", text[:40])
            text = self._decode(audio, language, LOOP_BEAM_SIZE)
        return text

    def _decode(self, audio: npt.NDArray[np.float32], language: str, beam_size: int) -> str:
        segments, _info = self._model.transcribe(
            np.ascontiguousarray(audio, dtype=np.float32),
            language=language,
            task="transcribe",
            beam_size=beam_size,
            temperature=0.0,
            vad_filter=False,
            condition_on_previous_text=False,
            without_timestamps=True,
        )
        # Japanese is written without spaces: a space between Whisper's segments would be
        # dropped by the scoring anyway, and is not written into the transcript.
        joiner = "" if language == "ja" else " "
        return joiner.join(str(segment.text).strip() for segment in segments).strip()


def looped(text: str) -> bool:
    """Whether a transcript repeats itself as a looping decoder writes: its UTF-8 bytes compress
    by more than ``LOOP_COMPRESSION_RATIO`` (Whisper's own test of a failed decode; speech
    transcripts stay well under it)."""
    data = text.encode()
    return len(data) > 0 and len(data) / len(zlib.compress(data)) > LOOP_COMPRESSION_RATIO


# Windows of at most 32 frames: 16, then 32 each for Piper (see the module docstring).
SMALLEST_WINDOWS = SchedulerSettings(first_window_frames=16, max_window_frames=32)


def rendering_speaker(engine: Engine, voice: str, rendering: str) -> LocalSpeaker:
    """The speaker that gives ``rendering`` (one of ``RENDERINGS``) of ``voice``."""
    if rendering == "whole":
        return reference_speaker(engine, voice)
    if rendering == "windows":
        sentences = ChunkingConfig(strategy=Strategy.SENTENCE, lead_cost=None)
        config = SessionConfig(voice, chunking=sentences)
        return LocalSpeaker(engine, config, scheduler=SMALLEST_WINDOWS)
    if rendering in {"streamed", "tokens"}:
        return streamed_speaker(engine, voice)
    if rendering in {"word", "word1"}:
        words = ChunkingConfig(
            strategy=Strategy.WORD, chunk_length_schedule=(1,) if rendering == "word1" else None
        )
        return LocalSpeaker(engine, SessionConfig(voice, chunking=words))
    raise ValueError(f"not a rendering: {rendering!r} (one of {', '.join(RENDERINGS)})")


class Speakers:
    """One ``LocalSpeaker`` a rendering (``rendering_speaker``), all on one engine, for a voice
    of ``language`` (``SCORINGS``)."""

    def __init__(
        self,
        engine: Engine,
        voice: str,
        renderings: Sequence[str] = RENDERINGS,
        language: str = "en",
    ) -> None:
        self.language = language
        self._speakers: dict[str, LocalSpeaker] = {}
        try:
            for rendering in renderings:
                self._speakers[rendering] = rendering_speaker(engine, voice, rendering)
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> Speakers:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self) -> None:
        for speaker in self._speakers.values():
            speaker.close()

    def heard(
        self,
        transcriber: Transcriber,
        text: str,
        settings: VoiceSettings = SETTINGS,
        token_rate: float = 50.0,
    ) -> dict[str, str]:
        """What ``transcriber`` hears in each rendering of ``text``."""
        options = StartOptions(settings=settings, output_format=RECOGNISER_FORMAT)
        heard = {}
        for rendering, speaker in self._speakers.items():
            said = paced(llm_tokens(text), token_rate) if rendering == "tokens" else text
            heard[rendering] = transcriber.transcribe(
                speaker.say(said, options).audio, self.language
            )
        return heard


@dataclass(frozen=True)
class Heard:
    text: str  # what the recogniser wrote
    errors: int  # errors against the reference, in its language's units (words, kana)


@dataclass(frozen=True)
class SentenceResult:
    reference: str
    units: int  # the reference's units: spoken words (English), kana (Japanese)
    heard: Mapping[str, Heard]  # by rendering

    def rate(self, rendering: str) -> float:
        """The rendering's errors per reference unit (WER, CER)."""
        return self.heard[rendering].errors / max(1, self.units)


@dataclass(frozen=True)
class IntelligibilityReport:
    voice: str
    recogniser: str
    renderings: tuple[str, ...]
    sentences: tuple[SentenceResult, ...]
    token_rate: float = 50.0
    language: str = "en"  # a key of SCORINGS: what the units and the rate are

    @property
    def scoring(self) -> Scoring:
        return SCORINGS[self.language]

    @property
    def units(self) -> int:
        return sum(s.units for s in self.sentences)

    def errors(self, rendering: str) -> int:
        return sum(s.heard[rendering].errors for s in self.sentences)

    def rate(self, rendering: str) -> float:
        """Total errors over total reference units (not a mean of per-sentence rates): the
        word error rate of English, the kana character error rate of Japanese."""
        return self.errors(rendering) / max(1, self.units)

    def against_whole(self) -> dict[str, PairedDifference]:
        """Each rendering's errors against whole renderings', text by text (none without
        whole renderings): whether a rendering is heard worse than whole, or only by chance
        (a stream's timing moves its count by about ten kana a run)."""
        if "whole" not in self.renderings:
            return {}
        whole = [s.heard["whole"].errors for s in self.sentences]
        return {
            r: PairedDifference.of([s.heard[r].errors for s in self.sentences], whole)
            for r in self.renderings
            if r != "whole"
        }

    def as_dict(self) -> dict[str, object]:
        """As JSON: the rate under its metric's name (``wer``, ``cer``) and the reference's
        size under its unit's (``words``, ``kana``); ``against_whole``: each rendering's
        ``PairedDifference`` from whole renderings."""
        metric, unit = self.scoring.metric.lower(), self.scoring.unit
        return {
            "voice": self.voice,
            "language": self.language,
            "recogniser": self.recogniser,
            "token_rate": self.token_rate,
            "metric": metric,
            unit: self.units,
            metric: {r: round(self.rate(r), 4) for r in self.renderings},
            "errors": {r: self.errors(r) for r in self.renderings},
            "against_whole": {r: d.as_dict() for r, d in self.against_whole().items()},
            "sentences": [
                {
                    "reference": s.reference,
                    unit: s.units,
                    "heard": {r: s.heard[r].text for r in self.renderings},
                    "errors": {r: s.heard[r].errors for r in self.renderings},
                }
                for s in self.sentences
            ],
        }

    def format(self) -> str:
        """The rate of each rendering, then each misheard text with the renderings misheard."""
        metric, unit = self.scoring.metric, self.scoring.unit
        lines = [
            f"{self.voice}: {len(self.sentences)} texts, {self.units} {unit}; {self.recogniser}",
            f"  {'rendering':<10} {metric:>6} {'errors':>7}",
        ]
        lines += [
            f"  {r:<10} {self.rate(r):>6.3f} {self.errors(r):>7}  {RENDERING_HELP.get(r, '')}"
            for r in self.renderings
        ]
        paired = self.against_whole()
        if paired:
            lines.append(
                f"  against whole, text by text ({len(self.sentences)} texts; p: one-sided "
                "sign-flip test that chance gives as many errors more):"
            )
        lines += [
            f"  {r:<10} {d.total:>+6} errors  worse in {d.larger}, better in {d.smaller}"
            f"  p = {d.p:.3f}"
            for r, d in paired.items()
        ]
        misheard = [s for s in self.sentences if any(h.errors for h in s.heard.values())]
        if misheard:
            lines.append("  misheard:")
        for s in misheard:
            lines.append(f"    {'ref':<10} {s.reference}")
            for rendering in self.renderings:
                heard = s.heard[rendering]
                if heard.errors:
                    lines.append(f"    {rendering:<10} {heard.text}  [{heard.errors}]")
        return "\n".join(lines)


def scored(
    voice: str, reference: str, heard: Mapping[str, str], language: str = "en"
) -> SentenceResult:
    """Each rendering's transcript of ``reference`` scored against it in ``language`` (a key of
    ``SCORINGS``), and logged."""
    errors_of = SCORINGS[language].errors
    results = {}
    units = errors_of(reference, "")[1]
    for rendering, text in heard.items():
        errors, _ = errors_of(reference, text)
        results[rendering] = Heard(text, errors)
    log.info("%s: %r -> %r", voice, reference, heard)
    return SentenceResult(reference, units, results)


def compare(
    engine: Engine,
    voice: str,
    texts: Sequence[str],
    transcriber: Transcriber,
    renderings: Sequence[str] = RENDERINGS,
    settings: VoiceSettings = SETTINGS,
    token_rate: float = 50.0,
    progress: Callable[[int], None] = lambda _index: None,
    language: str = "en",
) -> IntelligibilityReport:
    """Each of ``texts`` spoken in each of ``renderings``, transcribed and scored in
    ``language``, the voice's (``language_of``; ``progress`` is told the index of each text
    as it starts)."""
    if language not in SCORINGS:
        spoken = ", ".join(SCORINGS)
        raise ValueError(f"not a language the bench scores: {language!r} (one of {spoken})")
    results = []
    with Speakers(engine, voice, renderings, language) as speakers:
        for index, text in enumerate(texts):
            progress(index)
            heard = speakers.heard(transcriber, text, settings, token_rate)
            # Scored once the speakers are done with the text: a Japanese reading runs
            # pyopenjtalk, which the engine's phonemizer also calls (kana's docstring).
            results.append(scored(voice, text, heard, language))
    return IntelligibilityReport(
        voice, transcriber.description, tuple(renderings), tuple(results), token_rate, language
    )


def compare_replies(
    engine: Engine,
    voice: str,
    replies: Sequence[Reply],
    transcriber: Transcriber,
    renderings: Sequence[str] = RENDERINGS,
    token_rate: float = 50.0,
    progress: Callable[[str], None] = lambda _name: None,
    language: str = "en",
) -> IntelligibilityReport:
    """``compare`` on agent replies (``progress`` is told each reply's name)."""
    return compare(
        engine,
        voice,
        [reply.text for reply in replies],
        transcriber,
        renderings,
        token_rate=token_rate,
        progress=lambda index: progress(replies[index].name),
        language=language,
    )
