"""Intelligibility: does a recogniser understand the streamed audio as well as the whole render?

Each sentence is prepared and rendered twice with the same seed: once in one run over all its
frames (*whole*), and once window by window as the scheduler cuts a stream (*streamed*: a first
window of ``first_frames``, then ``later_frames``, a short tail folded into the last window). Both
renderings are resampled to 16 kHz with voxflow's own resampler and transcribed by PocketSphinx
(offline, its bundled US English model), and each transcript is scored against the sentence by
word error rate. PocketSphinx is a weak recogniser, so the whole render's WER is far from zero;
the figure that matters is the difference between the two renderings, which is what the cuts
cost a listener. The sentences have no digits, so no number spelling is needed to compare words.

``compare_replies`` does the same for agent replies on the server's whole path: each reply
streamed as LLM tokens through a session on the server's own ``Services`` (the segmenter's
leads, their takeovers, leads cut mid-turn, the seams: ``prosody_render.stream_reply``)
against each of its sentences rendered whole and joined as the server joins sentences
(``prosody_render.render_reference``). Both are scored against the reply's spoken form (its
normalized text: "$86.40" is "eighty six dollars and forty cents"), and rendered without the
voice's noise (``noise_scale = noise_w = 0``), so that the two differ only where the stream cut.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pocketsphinx

from voxflow import Engine, VoiceSettings
from voxflow.audio.pcm import to_pcm16
from voxflow.audio.resample import StreamResampler
from voxflow.engines.base import FloatArray
from voxflow.runtime.windows import WindowPolicy
from voxflow.server.services import Services
from voxflow_bench.corpus import Reply
from voxflow_bench.prosody.render import render_reference, stream_reply
from voxflow_bench.tokens import llm_tokens

__all__ = [
    "REPLY_SETTINGS",
    "SENTENCES",
    "IntelligibilityReport",
    "SentenceResult",
    "Transcriber",
    "compare",
    "compare_replies",
    "render_streamed",
    "render_whole",
    "word_error_rate",
    "word_errors",
]

log = logging.getLogger(__name__)

RECOGNISER_RATE = 16000
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

    def transcribe(self, audio: FloatArray, sample_rate: int) -> str:
        """The recognised text of mono float32 ``audio`` at ``sample_rate`` (lower case)."""
        resampler = StreamResampler(sample_rate, RECOGNISER_RATE)
        resampled = np.concatenate((resampler.process(audio), resampler.flush()))
        self._decoder.set_cmn(self._initial_cmn)
        self._decoder.start_utt()
        self._decoder.process_raw(to_pcm16(resampled), full_utt=True)
        self._decoder.end_utt()
        hypothesis = self._decoder.hyp()
        return "" if hypothesis is None else str(hypothesis.hypstr)


def render_whole(
    engine: Engine, text: str, voice: str, settings: VoiceSettings, threads: int | None = None
) -> tuple[FloatArray, int]:
    """``text`` prepared and rendered in one run over all its frames; audio and sample rate."""
    utterance = engine.prepare(text, voice, settings, threads)
    return engine.render(utterance, 0, utterance.num_frames, threads), utterance.sample_rate


def render_streamed(
    engine: Engine,
    text: str,
    voice: str,
    settings: VoiceSettings,
    policy: WindowPolicy,
    threads: int | None = None,
) -> tuple[FloatArray, int]:
    """``text`` prepared, then rendered in the windows a stream gets: ``first_frames``, then
    ``later_frames`` each, a short tail folded into the last; the windows' audio joined."""
    utterance = engine.prepare(text, voice, settings, threads)
    chunks: list[FloatArray] = []
    start, size = 0, policy.first_frames
    while start < utterance.num_frames:
        start, stop = policy.window(start, utterance.num_frames, size)
        audio = engine.render(utterance, start, stop, threads)
        expected = (stop - start) * utterance.samples_per_frame
        if audio.shape != (expected,):
            raise RuntimeError(
                f"window [{start}, {stop}) gave {audio.shape} samples, expected {expected}"
            )
        chunks.append(audio)
        start, size = stop, policy.later_frames
    return np.concatenate(chunks), utterance.sample_rate


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
    policy: WindowPolicy,
    transcriber: Transcriber,
    settings: VoiceSettings = SETTINGS,
    threads: int | None = None,
) -> IntelligibilityReport:
    """Each sentence rendered whole and streamed (same seed), both transcribed and scored.
    ``threads``: CPU threads per engine call (the engine's default when None; the audio does
    not depend on it)."""
    results = []
    for text in sentences:
        whole = transcriber.transcribe(*render_whole(engine, text, voice, settings, threads))
        streamed = transcriber.transcribe(
            *render_streamed(engine, text, voice, settings, policy, threads)
        )
        results.append(_scored(voice, text, whole, streamed))
    return IntelligibilityReport(voice, tuple(results))


def _scored(voice: str, reference: str, whole: str, streamed: str) -> SentenceResult:
    """Both transcripts of ``reference`` scored against it."""
    whole_errors, words = word_errors(reference, whole)
    streamed_errors, _ = word_errors(reference, streamed)
    log.info("%s: %r -> whole %r, streamed %r", voice, reference, whole, streamed)
    return SentenceResult(reference, whole, streamed, words, whole_errors, streamed_errors)


def compare_replies(
    services: Services,
    voice: str,
    replies: Sequence[Reply],
    transcriber: Transcriber,
    token_rate: float = 50.0,
    progress: Callable[[str], None] = lambda _name: None,
) -> IntelligibilityReport:
    """Each reply streamed as LLM tokens on the server's path, and its sentences rendered whole
    (see the module docstring); both transcribed and scored against its spoken form."""
    results = []
    for reply in replies:
        progress(reply.name)
        spoken = services.normalizer.normalize(reply.text).text
        streamed = stream_reply(
            services, reply.text, voice, REPLY_SETTINGS, llm_tokens(reply.text), token_rate
        )
        whole = render_reference(
            services.engine,
            voice,
            reply.text,
            REPLY_SETTINGS,
            services.session_config().seams,
            services.normalizer,
        )
        heard_whole = transcriber.transcribe(whole.audio, whole.sample_rate)
        heard_streamed = transcriber.transcribe(streamed.audio, streamed.sample_rate)
        results.append(_scored(voice, spoken, heard_whole, heard_streamed))
    return IntelligibilityReport(voice, tuple(results))
