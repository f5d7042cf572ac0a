"""The engine-only floor (``voxflow bench --calls --floor``): what a second of audio costs the
engine alone, in the best case a server could hope for.

Every sentence of the calls' replies is rendered whole, on one thread, in this process: one
``prepare`` (the text stage) and one ``render`` of all its frames, with one intra-op thread, no
windows, no context frames, no leads, no encoding or protocol. The sentences are cut as a
session cuts them (``segment_text``, sentence strategy) and normalized as the server does by
default (``Normalizer``); both happen outside the timed calls. CPU time is the thread's own
(``time.thread_time``): with one intra-op thread ONNX Runtime runs on the calling thread, and
``process_cpu_s`` (the whole process's, over the same calls) says whether anything ran
elsewhere. The first sentence is rendered once untimed first (sessions, arenas, caches).

The calls' CPU per heard second, read against this floor, is what the server adds: windows and
their context, leads, audio no listener heard, scheduling, encoding and the protocols.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from voxflow import (
    ChunkingConfig,
    Engine,
    Normalizer,
    Strategy,
    TextLanguage,
    VoiceSettings,
    segment_text,
    text_rules_of,
)
from voxflow_bench.corpus import Reply

__all__ = ["EngineFloor", "corpus_sentences", "measure_floor"]

# One segment a sentence (a sentence over max_chars is cut, as a session cuts it), no lead.
_SENTENCES = ChunkingConfig(strategy=Strategy.SENTENCE, lead_cost=None, lookahead_s=None)


@dataclass(frozen=True)
class EngineFloor:
    voice: str
    sentences: int
    audio_s: float
    text_stage_cpu_s: float
    render_cpu_s: float
    process_cpu_s: float  # the whole process over the same calls (== their sum on one thread)

    @property
    def text_stage_per_audio_s(self) -> float:
        return self.text_stage_cpu_s / self.audio_s if self.audio_s > 0 else 0.0

    @property
    def render_per_audio_s(self) -> float:
        return self.render_cpu_s / self.audio_s if self.audio_s > 0 else 0.0

    @property
    def per_audio_s(self) -> float:
        """CPU seconds a second of audio, text stage and render together."""
        return self.text_stage_per_audio_s + self.render_per_audio_s

    def line(self) -> str:
        return (
            f"engine floor (whole sentences, one thread): text stage "
            f"{self.text_stage_per_audio_s:.4f} + render {self.render_per_audio_s:.4f} = "
            f"{self.per_audio_s:.4f} CPU s per audio s ({self.sentences} sentences, "
            f"{self.audio_s:.1f} s of audio, voice {self.voice})"
        )

    def as_dict(self) -> dict[str, object]:
        return {
            "voice": self.voice,
            "sentences": self.sentences,
            "audio_s": round(self.audio_s, 2),
            "text_stage_cpu_s": round(self.text_stage_cpu_s, 3),
            "render_cpu_s": round(self.render_cpu_s, 3),
            "process_cpu_s": round(self.process_cpu_s, 3),
            "text_stage_per_audio_s": round(self.text_stage_per_audio_s, 5),
            "render_per_audio_s": round(self.render_per_audio_s, 5),
            "per_audio_s": round(self.per_audio_s, 5),
        }


def corpus_sentences(
    replies: Sequence[Reply], language: TextLanguage = TextLanguage.ENGLISH
) -> list[str]:
    """Every sentence of ``replies``, in order, as the engine is given it (normalized), read
    by ``language``'s rules as a voice of it reads them."""
    normalizer = Normalizer(language=language)
    spoken = (
        normalizer.normalize(segment.text).text.strip()
        for reply in replies
        for segment in segment_text(reply.text, _SENTENCES, language)
    )
    return [text for text in spoken if text]


def measure_floor(
    engine: Engine,
    voice: str,
    replies: Sequence[Reply],
    progress: Callable[[int, int], None] | None = None,
) -> EngineFloor:
    """Render every sentence of ``replies`` whole with ``voice`` on this thread (blocking).
    ``progress(done, of)`` is called every 10 sentences."""
    sentences = corpus_sentences(replies, text_rules_of(engine.voice_info(voice).language))
    if not sentences:
        raise ValueError("the corpus has no sentence to render")
    settings = VoiceSettings()
    warm = engine.prepare(sentences[0], voice, settings, threads=1)
    engine.render(warm, 0, warm.num_frames, threads=1)
    text_stage = render = audio = 0.0
    process_start = time.process_time()
    for number, sentence in enumerate(sentences):
        start = time.thread_time()
        utterance = engine.prepare(sentence, voice, settings, threads=1)
        prepared = time.thread_time()
        samples = engine.render(utterance, 0, utterance.num_frames, threads=1)
        rendered = time.thread_time()
        text_stage += prepared - start
        render += rendered - prepared
        audio += len(samples) / utterance.sample_rate
        if progress is not None and (number + 1) % 10 == 0:
            progress(number + 1, len(sentences))
    process = time.process_time() - process_start
    return EngineFloor(voice, len(sentences), audio, text_stage, render, process)
