"""Intelligibility: does a recogniser understand the streamed audio as well as whole renders?

Each text is spoken twice through ``LocalSpeaker``, the server's own path, with the same seed:
*whole*, the sentence-by-sentence baseline of local TTS servers (``streamed=False`` with sentence
chunking: each sentence rendered in one run, joined by the server's seams), and *streamed*. Both
come out at 16 kHz, resampled by the server's resampler as a client asking for ``pcm_16000``
gets them, and PocketSphinx (offline, its bundled US English model) transcribes them; each
transcript is scored against the text by word error rate. PocketSphinx is a weak recogniser, so
the whole render's WER is far from zero; the figure that matters is the difference between the
two renderings, which is what streaming costs a listener.

``compare`` (the built-in sentences) streams each sentence in windows, and nothing else
(sentence chunking, no lead): the cost of the windows alone, which for Piper is nothing (they
are the whole render to within rounding) and for Kokoro is what its running normalisation does
(docs/kokoro.md). The scheduler sizes windows by how far ahead the stream is, which on a busy
machine is a matter of timing: here they are held to the smallest it renders (16 frames, then
32 each: ``SMALLEST_WINDOWS``), which makes Piper's fixed. Kokoro's are not: its first window is
its own (24 frames), and a Kokoro stream with little audio in hand by its learnt costs gets
16-frame windows, so its figure follows the speaker's history (a fresh process gives the same
figure each run). The sentences have no digits, so no number spelling is needed to compare
words.

``compare_replies`` streams agent replies as the server does, as LLM tokens at an LLM's pace
(``tokens.paced``): the leads, their takeovers and the cuts made while the text runs dry, on top
of the windows. Both renderings are scored against the reply's spoken form (as the session's
normalizer says it: "$86.40" is "eighty-six dollars and forty cents") and rendered without the
voice's noise (``noise_scale = noise_w = 0``), so that the two differ only where the stream cut.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pocketsphinx

from voxflow import (
    ChunkingConfig,
    Engine,
    LocalSpeaker,
    SchedulerSettings,
    SessionConfig,
    StartOptions,
    Strategy,
    VoiceSettings,
)
from voxflow_bench.corpus import Reply
from voxflow_bench.prosody.render import reference_speaker, streamed_speaker
from voxflow_bench.tokens import llm_tokens, paced

__all__ = [
    "RECOGNISER_FORMAT",
    "REPLY_SETTINGS",
    "SENTENCES",
    "SETTINGS",
    "SMALLEST_WINDOWS",
    "IntelligibilityReport",
    "SentenceResult",
    "Speakers",
    "Transcriber",
    "compare",
    "compare_replies",
    "scored",
    "word_error_rate",
    "word_errors",
]

log = logging.getLogger(__name__)

RECOGNISER_RATE = 16000
RECOGNISER_FORMAT = f"pcm_{RECOGNISER_RATE}"
SETTINGS = VoiceSettings(seed=1)
REPLY_SETTINGS = VoiceSettings(noise_scale=0.0, noise_w=0.0)

# What a voice agent says: appointments, orders, weather, apologies. No digits or abbreviations
# (the recogniser writes words), short and long clauses, and one long clause without commas.
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

_WORD = re.compile(r"[a-z]+(?:'[a-z]+)*")


def _words(text: str) -> list[str]:
    """Lower-cased words, punctuation dropped (apostrophes inside a word kept)."""
    return _WORD.findall(text.lower())


def word_errors(reference: str, hypothesis: str) -> tuple[int, int]:
    """Word-level edit distance (substitutions + deletions + insertions) and the number of
    reference words, after lower-casing and dropping punctuation."""
    ref, hyp = _words(reference), _words(hypothesis)
    previous = list(range(len(hyp) + 1))
    for i, ref_word in enumerate(ref, start=1):
        current = [i]
        for j, hyp_word in enumerate(hyp, start=1):
            current.append(
                min(
                    previous[j] + 1,  # deletion
                    current[j - 1] + 1,  # insertion
                    previous[j - 1] + (ref_word != hyp_word),  # substitution or match
                )
            )
        previous = current
    return previous[-1], len(ref)


def word_error_rate(reference: str, hypothesis: str) -> float:
    """Word errors per reference word (above 1 when the hypothesis inserts many words)."""
    errors, words = word_errors(reference, hypothesis)
    if words == 0:
        raise ValueError("the reference has no words")
    return errors / words


class Transcriber:
    """One PocketSphinx decoder with its default (bundled US English) model.

    Not thread-safe: a decoder holds one utterance at a time; give each thread its own. Each
    transcription starts from the model's initial cepstral mean, so that no result depends on
    what was transcribed before (digital silence, for one, leaves a NaN mean behind).
    """

    def __init__(self) -> None:
        self._decoder = pocketsphinx.Decoder(samprate=RECOGNISER_RATE, logfn=os.devnull)
        self._initial_cmn = self._decoder.get_cmn()

    def transcribe(self, audio: npt.NDArray[np.float32]) -> str:
        """The recognised text of mono float ``audio`` at 16 kHz (lower case).

        The audio is heard with 200 ms of silence before and after it, as a listener's player
        plays it: a stream starts on its first word (the session trims a render's leading
        silence), and without a lead-in the recogniser mishears it ("let me" as "i'm a").
        """
        quiet = np.zeros(RECOGNISER_RATE // 5, dtype=np.float32)
        heard = np.concatenate((quiet, audio, quiet))
        pcm = np.clip(np.round(heard * 32768.0), -32768, 32767).astype("<i2")
        self._decoder.set_cmn(self._initial_cmn)
        self._decoder.start_utt()
        self._decoder.process_raw(pcm.tobytes(), full_utt=True)
        self._decoder.end_utt()
        hypothesis = self._decoder.hyp()
        return "" if hypothesis is None else str(hypothesis.hypstr)


# Windows of at most 32 frames: 16, then 32 each for Piper (see the module docstring).
SMALLEST_WINDOWS = SchedulerSettings(first_window_frames=16, max_window_frames=32)


class Speakers:
    """The two renderings of a voice, each a ``LocalSpeaker`` on one engine: ``whole`` sentence
    by sentence, and ``streamed`` in windows: with the server's leads, chunking and windows when
    ``leads``, else by sentence as ``whole`` is, in the smallest windows (see the module
    docstring)."""

    def __init__(self, engine: Engine, voice: str, leads: bool) -> None:
        self.whole = reference_speaker(engine, voice)
        sentences = ChunkingConfig(strategy=Strategy.SENTENCE, lead_cost=None)
        windowed = SessionConfig(voice, chunking=sentences)
        self.streamed = (
            streamed_speaker(engine, voice)
            if leads
            else LocalSpeaker(engine, windowed, scheduler=SMALLEST_WINDOWS)
        )
        self.spoken = windowed.normalizer  # what a session says for a text

    def __enter__(self) -> Speakers:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.streamed.close()
        self.whole.close()

    def heard(
        self,
        transcriber: Transcriber,
        text: str,
        settings: VoiceSettings,
        pieces: Iterable[str] | None = None,
    ) -> tuple[str, str]:
        """What ``transcriber`` hears in ``text`` spoken whole and streamed (its ``pieces`` as
        they arrive, when given)."""
        options = StartOptions(settings=settings, output_format=RECOGNISER_FORMAT)
        whole = self.whole.say(text, options)
        streamed = self.streamed.say(text if pieces is None else pieces, options)
        return transcriber.transcribe(whole.audio), transcriber.transcribe(streamed.audio)


@dataclass(frozen=True)
class SentenceResult:
    reference: str
    whole: str  # what the recogniser heard in the whole render
    streamed: str  # ... and in the streamed one
    words: int
    whole_errors: int
    streamed_errors: int

    @property
    def wer_whole(self) -> float:
        return self.whole_errors / self.words

    @property
    def wer_streamed(self) -> float:
        return self.streamed_errors / self.words


@dataclass(frozen=True)
class IntelligibilityReport:
    voice: str
    sentences: tuple[SentenceResult, ...]

    @property
    def wer_whole(self) -> float:
        """Total errors over total reference words (not a mean of per-sentence rates)."""
        return sum(s.whole_errors for s in self.sentences) / self._words

    @property
    def wer_streamed(self) -> float:
        return sum(s.streamed_errors for s in self.sentences) / self._words

    @property
    def _words(self) -> int:
        return max(1, sum(s.words for s in self.sentences))

    def as_dict(self) -> dict[str, object]:
        return {
            "voice": self.voice,
            "wer_whole": round(self.wer_whole, 4),
            "wer_streamed": round(self.wer_streamed, 4),
            "sentences": [
                {
                    "reference": s.reference,
                    "whole": s.whole,
                    "streamed": s.streamed,
                    "wer_whole": round(s.wer_whole, 4),
                    "wer_streamed": round(s.wer_streamed, 4),
                }
                for s in self.sentences
            ],
        }

    def format(self) -> str:
        lines = [
            f"{self.voice}: WER whole {self.wer_whole:.3f}, streamed {self.wer_streamed:.3f} "
            f"({len(self.sentences)} sentences, {self._words} words)"
        ]
        for s in self.sentences:
            lines.append(f"  ref       {s.reference}")
            lines.append(f"  whole     {s.whole}  [{s.wer_whole:.2f}]")
            lines.append(f"  streamed  {s.streamed}  [{s.wer_streamed:.2f}]")
        return "\n".join(lines)


def compare(
    engine: Engine,
    voice: str,
    sentences: Sequence[str],
    transcriber: Transcriber,
    settings: VoiceSettings = SETTINGS,
) -> IntelligibilityReport:
    """Each sentence spoken whole and in windows (same seed), both transcribed and scored."""
    results = []
    with Speakers(engine, voice, leads=False) as speakers:
        for text in sentences:
            whole, streamed = speakers.heard(transcriber, text, settings)
            results.append(scored(voice, text, whole, streamed))
    return IntelligibilityReport(voice, tuple(results))


def scored(voice: str, reference: str, whole: str, streamed: str) -> SentenceResult:
    """Both transcripts of ``reference`` scored against it (and logged)."""
    whole_errors, words = word_errors(reference, whole)
    streamed_errors, _ = word_errors(reference, streamed)
    log.info("%s: %r -> whole %r, streamed %r", voice, reference, whole, streamed)
    return SentenceResult(reference, whole, streamed, words, whole_errors, streamed_errors)


def compare_replies(
    engine: Engine,
    voice: str,
    replies: Sequence[Reply],
    transcriber: Transcriber,
    token_rate: float = 50.0,
    progress: Callable[[str], None] = lambda _name: None,
) -> IntelligibilityReport:
    """Each reply streamed as LLM tokens at ``token_rate`` a second, and spoken whole sentence
    by sentence (see the module docstring); both transcribed and scored against its spoken
    form."""
    results = []
    with Speakers(engine, voice, leads=True) as speakers:
        for reply in replies:
            progress(reply.name)
            tokens = paced(llm_tokens(reply.text), token_rate)
            whole, streamed = speakers.heard(transcriber, reply.text, REPLY_SETTINGS, tokens)
            spoken = speakers.spoken.normalize(reply.text).text
            results.append(scored(voice, spoken, whole, streamed))
    return IntelligibilityReport(voice, tuple(results))
