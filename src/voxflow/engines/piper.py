"""Piper (VITS) engine with sub-sentence acoustic streaming.

At load time the voice's single ONNX graph is split in memory into a text stage, a flow stage and
a decoder stage (``voxflow.engines.graph_split``). ``prepare`` phonemizes, runs the text stage
once and draws the prior noise, leaving the latent frames ``z_p`` in the ``Utterance``. ``render``
runs the flow and the HiFi-GAN decoder (both convolutional in time) on one window of frames, each
padded on both sides with enough context, computed and thrown away, that a window's samples equal
those of a whole-utterance run (the tests hold the relative error below 1e-3). The first audio
then costs one text stage plus one small window, whatever the length of the sentence.

Audio is the model's raw output, clipped to [-1, 1]: no per-sentence peak normalization (Piper's
default), so loudness stays constant across the segments of a stream.
"""

from __future__ import annotations

import json
import logging
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
from piper.config import PhonemeType, PiperConfig

from voxflow.engines import conv2d, graph_split, sessions
from voxflow.engines.base import (
    FloatArray,
    Utterance,
    VoiceInfo,
    VoiceSettings,
    WordSpan,
)
from voxflow.engines.graph_split import (
    DP_NOISE,
    SPEAKER_INPUT,
    Y_MASK,
    Z_P,
    SplitModel,
    Z,
    split_piper_model,
)
from voxflow.engines.phonemize import Phonemizer
from voxflow.engines.registry import VoiceRegistry
from voxflow.engines.sessions import ByThreads, cpu_session, shrinking_run_options
from voxflow.engines.split_cache import SplitCache, cached_cut

# Speech may begin up to this many frames (35 ms) before the first word's first frame (a stress
# mark, a breath): the silence before it (25 to 80 ms on the bundled voice) is not rendered.
ONSET_FRAMES = 3

log = logging.getLogger(__name__)

_BOS, _EOS, _PAD = "^", "$", "_"


@dataclass(frozen=True)
class EngineSettings:
    """How the engine runs ONNX Runtime and cuts windows."""

    intra_op_threads: int = 1
    # Also load sessions with this many intra-op threads, for jobs the scheduler runs while
    # nothing else runs (a fresh stream's first audio): 1.3x faster for the text stage and the
    # decoder, 1.6x for the flow on two cores, and bitwise the same results. 0 or 1: none.
    wide_threads: int = 2
    # Context frames on each side of a window, per stage. For the bundled voice the decoder is
    # exact (error ~1e-7) from 10 frames and the flow from 24; at 8 and 16 both sit near 1e-4.
    decoder_overlap_frames: int = 10
    flow_overlap_frames: int = 24
    # The first flow run of an utterance is on the time-to-first-audio path: it reads only this
    # many frames past the window. The audio then differs from a whole run by ~2e-5 (relative;
    # ~4e-7 with the full context, 3e-3 with 8 frames); the tests hold it under 1e-3.
    first_flow_overlap_frames: int = 16
    # After the first window, the flow runs ahead in chunks of at least this many frames: it costs
    # a sixth of the decoder per frame, so running ahead is cheap and saves its wide context.
    flow_chunk_frames: int = 512
    # Flow and decoder runs of at most this many frames (context included) keep their ONNX
    # Runtime arena for the next run; larger ones (a whole segment in one window) give it back.
    # The server's windows (at most 256 frames, flow chunks of 512) stay under it, so what they
    # keep is bounded, and each saves the arena's regrowth: 11% of a decoder window.
    keep_arena_frames: int = 600
    # The text stage's memory grows with the square of its input (attention over phonemes, the
    # alignment of phonemes to frames): a 1,250-character spoken text took 650 MiB. Callers cut
    # text into pieces well under this; the engine refuses longer ones with a clear error.
    max_phoneme_ids: int = 2000
    # Where a voice's cut and optimized stages are kept between starts (None: made at every
    # load; engines.split_cache).
    split_cache: SplitCache | None = None

    def __post_init__(self) -> None:
        if self.intra_op_threads < 1 or self.wide_threads < 0:
            raise ValueError("intra_op_threads must be >= 1 and wide_threads >= 0")
        if self.max_phoneme_ids < 16:
            raise ValueError("max_phoneme_ids must be >= 16")
        if min(self.decoder_overlap_frames, self.flow_overlap_frames) < 0 or (
            self.first_flow_overlap_frames < 0
        ):
            raise ValueError("overlap frames must be >= 0")
        if self.flow_chunk_frames < 1 or self.keep_arena_frames < 0:
            raise ValueError("flow_chunk_frames must be >= 1 and keep_arena_frames >= 0")


class LoadedVoice:
    """One voice's config, phonemizer and ONNX Runtime sessions (one set per thread count)."""

    def __init__(self, info: VoiceInfo, settings: EngineSettings) -> None:
        self.info = info
        with open(info.config_path, encoding="utf-8") as file:
            raw: dict[str, Any] = json.load(file)
        self.config = PiperConfig.from_dict(raw)
        if self.config.phoneme_type != PhonemeType.ESPEAK:
            raise ValueError(
                f"voice {info.name}: phoneme type {self.config.phoneme_type.value!r} is not "
                "supported (espeak voices only)"
            )
        self.phonemizer = Phonemizer(self.config.espeak_voice, self.config.vowel_clusters)
        cached = cached_cut(
            settings.split_cache,
            SplitModel,
            [info.model_path],
            [graph_split, conv2d, sessions],
            lambda: split_piper_model(onnx.load(str(info.model_path))),
        )
        split = cached.value
        self.latent_channels = split.latent_channels
        self.has_speaker_input = split.has_speaker_input
        self.run_options = shrinking_run_options()
        self.keeping_options = ort.RunOptions()
        self._stages = ByThreads(
            lambda threads: _Stages(split, threads, cached.optimized),
            settings.intra_op_threads,
            settings.wide_threads,
        )

    def stages(self, threads: int | None) -> _Stages:
        """The sessions with ``threads`` intra-op threads if loaded, else the default ones."""
        return self._stages.get(threads)

    def speaker_id(self, requested: int | None) -> int | None:
        if self.config.num_speakers <= 1:
            if requested not in (None, 0):
                raise ValueError(f"voice {self.info.name} has a single speaker")
            return None
        speaker = self.config.default_speaker_id if requested is None else requested
        if not 0 <= speaker < self.config.num_speakers:
            raise ValueError(
                f"speaker_id {speaker} out of range for voice {self.info.name} "
                f"({self.config.num_speakers} speakers)"
            )
        return speaker


class PiperEngine:
    """The ``Engine`` for Piper voices. Thread-safe: ONNX Runtime sessions may run concurrently."""

    def __init__(self, registry: VoiceRegistry, settings: EngineSettings | None = None) -> None:
        self._registry = registry
        self._settings = settings or EngineSettings()
        self._loaded: dict[str, LoadedVoice] = {}
        self._load_lock = threading.Lock()
        # Flow output per utterance, dropped with the utterance (Utterance hashes by identity).
        self._flow_caches: weakref.WeakKeyDictionary[Utterance, _FlowCache] = (
            weakref.WeakKeyDictionary()
        )
        self._caches_lock = threading.Lock()
        self._flow_chunk = self._settings.flow_chunk_frames

    @property
    def settings(self) -> EngineSettings:
        return self._settings

    def voices(self) -> list[VoiceInfo]:
        return self._registry.list()

    def voice_info(self, voice: str) -> VoiceInfo:
        return self._registry.get(voice)

    def load(self, voice: str) -> LoadedVoice:
        """Load (once) and return a voice; raises ``VoiceNotFoundError`` for unknown names."""
        info = self._registry.get(voice)
        loaded = self._loaded.get(info.name)
        if loaded is not None and loaded.info == info:
            return loaded
        with self._load_lock:
            loaded = self._loaded.get(info.name)
            if loaded is None or loaded.info != info:
                log.info("loading voice %s from %s", info.name, info.model_path)
                loaded = LoadedVoice(info, self._settings)
                self._loaded[info.name] = loaded
            return loaded

    def prepare(
        self, text: str, voice: str, settings: VoiceSettings, threads: int | None = None
    ) -> Utterance:
        loaded = self.load(voice)
        config = loaded.config
        speaker = loaded.speaker_id(settings.speaker_id)
        phonemized = loaded.phonemizer.phonemize(text)
        phonemes, ids, id_owner = _phoneme_ids(phonemized.phonemes, config)
        if len(ids) > self._settings.max_phoneme_ids:
            raise TextTooLongError(len(ids), self._settings.max_phoneme_ids)
        rng = np.random.default_rng(settings.seed)
        channels = loaded.latent_channels
        if not phonemized.phonemes:
            return Utterance(
                text=text,
                voice=loaded.info.name,
                sample_rate=config.sample_rate,
                samples_per_frame=config.hop_length,
                latents=np.zeros((channels, 0), dtype=np.float32),
                phonemes=(),
                phoneme_frames=np.zeros(0, dtype=np.int64),
                words=(),
                speaker_id=speaker,
                onset_frames=ONSET_FRAMES,
            )

        noise_scale = config.noise_scale if settings.noise_scale is None else settings.noise_scale
        noise_w = config.noise_w_scale if settings.noise_w is None else settings.noise_w
        length_scale = config.length_scale / settings.speed
        feeds: dict[str, Any] = {
            "input": np.array([ids], dtype=np.int64),
            "input_lengths": np.array([len(ids)], dtype=np.int64),
            "scales": np.array([noise_scale, length_scale, noise_w], dtype=np.float32),
            DP_NOISE: rng.standard_normal((1, 2, len(ids)), dtype=np.float32),
        }
        if loaded.has_speaker_input:
            feeds[SPEAKER_INPUT] = np.array([speaker or 0], dtype=np.int64)
        text_stage = loaded.stages(threads).text
        m_p, logs_p, durations = text_stage.run(None, feeds, loaded.run_options)
        prior_noise = rng.standard_normal(m_p.shape[1:], dtype=np.float32)
        latents = (m_p[0] + prior_noise * np.exp(logs_p[0]) * np.float32(noise_scale)).astype(
            np.float32
        )

        id_frames = durations.reshape(-1).astype(np.int64)
        phoneme_frames = np.bincount(id_owner, weights=id_frames, minlength=len(phonemes)).astype(
            np.int64
        )
        # phonemes[0] is BOS, so text phoneme k is entry k + 1.
        frame_edges = np.concatenate([[0], np.cumsum(phoneme_frames)])
        words = tuple(
            WordSpan(
                word=w.word,
                char_start=w.char_start,
                char_end=w.char_end,
                start_frame=int(frame_edges[start + 1]),
                end_frame=int(frame_edges[end + 1]),
            )
            for w, (start, end) in zip(phonemized.words, phonemized.word_phonemes, strict=True)
        )
        return Utterance(
            text=text,
            voice=loaded.info.name,
            sample_rate=config.sample_rate,
            samples_per_frame=config.hop_length,
            latents=latents,
            phonemes=phonemes,
            phoneme_frames=phoneme_frames,
            words=words,
            speaker_id=speaker,
            onset_frames=ONSET_FRAMES,
        )

    def render(
        self, utterance: Utterance, start_frame: int, end_frame: int, threads: int | None = None
    ) -> FloatArray:
        total = utterance.num_frames
        if not 0 <= start_frame < end_frame <= total:
            raise ValueError(f"window [{start_frame}, {end_frame}) outside [0, {total})")
        loaded = self.load(utterance.voice)
        # The decoder window is the requested one plus decoder context, clipped to the utterance
        # (where the whole run pads too).
        dec_lo = max(0, start_frame - self._settings.decoder_overlap_frames)
        dec_hi = min(total, end_frame + self._settings.decoder_overlap_frames)
        cache = self._flow_cache(utterance)
        with cache.lock:
            if not cache.lo <= dec_lo <= cache.hi:
                # Nothing cached is of use (a takeover starts mid-utterance): start over here.
                cache.lo = cache.hi = dec_lo
            if dec_hi > cache.hi:
                self._extend_flow(
                    loaded, utterance, cache, dec_hi, end_frame - start_frame, threads
                )
            z_window = np.ascontiguousarray(cache.z[:, :, dec_lo:dec_hi])
        (audio,) = loaded.stages(threads).decoder.run(
            None,
            {Z: z_window, **_speaker(loaded, utterance)},
            self._options(loaded, dec_hi - dec_lo),
        )
        hop = utterance.samples_per_frame
        window = audio.reshape(-1)[(start_frame - dec_lo) * hop : (end_frame - dec_lo) * hop]
        clipped: FloatArray = np.clip(window, -1.0, 1.0).astype(np.float32, copy=False)
        return clipped

    def _options(self, loaded: LoadedVoice, frames: int) -> ort.RunOptions:
        """Run options for a flow or decoder run of ``frames``: keep the arena unless large."""
        if frames <= self._settings.keep_arena_frames:
            return loaded.keeping_options
        return loaded.run_options

    def _flow_cache(self, utterance: Utterance) -> _FlowCache:
        with self._caches_lock:
            cache = self._flow_caches.get(utterance)
            if cache is None:
                cache = _FlowCache(utterance.latents.shape[0], utterance.num_frames)
                self._flow_caches[utterance] = cache
            return cache

    def _extend_flow(
        self,
        loaded: LoadedVoice,
        utterance: Utterance,
        cache: _FlowCache,
        needed: int,
        window: int,
        threads: int | None,
    ) -> None:
        """Run the flow so that ``cache.z`` is exact from ``cache.lo`` up to at least ``needed``.

        The first run covers just the first window (it is on the time-to-first-audio path); later
        runs reach four decoder windows (of the size being rendered) further, at most
        ``flow_chunk_frames``, so the flow's context is paid once per few windows rather than
        once per window, while a small window (a stream that is short of audio) is not held up
        by a long flow run.
        """
        total = utterance.num_frames
        start = cache.hi
        first = start == cache.lo
        ahead = min(self._flow_chunk, 4 * window)
        target = needed if first else min(total, max(needed, start + ahead))
        context = self._settings.flow_overlap_frames
        lo = max(0, start - context)
        hi = min(total, target + (self._settings.first_flow_overlap_frames if first else context))
        (z,) = loaded.stages(threads).flow.run(
            None,
            {
                Z_P: np.ascontiguousarray(utterance.latents[np.newaxis, :, lo:hi]),
                Y_MASK: np.ones((1, 1, hi - lo), dtype=np.float32),
                **_speaker(loaded, utterance),
            },
            self._options(loaded, hi - lo),
        )
        cache.z[:, :, start:target] = z[:, :, start - lo : target - lo]
        cache.hi = target


class _Stages:
    """The three ONNX Runtime sessions of a voice, run with ``threads`` intra-op threads."""

    def __init__(
        self, split: SplitModel, threads: int, optimized: Callable[[str, int], Path | None]
    ) -> None:
        self.text = cpu_session(split.text_stage, threads, optimized("text_stage", threads))
        self.flow = cpu_session(split.flow_stage, threads, optimized("flow_stage", threads))
        self.decoder = cpu_session(
            split.decoder_stage, threads, optimized("decoder_stage", threads)
        )


class TextTooLongError(ValueError):
    """A text whose phonemes exceed what one text stage may take (``max_phoneme_ids``)."""

    def __init__(self, ids: int, limit: int) -> None:
        super().__init__(
            f"text too long for one utterance: {ids} phoneme ids, at most {limit}; "
            "cut it into shorter pieces"
        )
        self.ids = ids
        self.limit = limit


class _FlowCache:
    """The flow's output for one utterance, exact for frames ``[lo, hi)``."""

    def __init__(self, channels: int, frames: int) -> None:
        self.z = np.empty((1, channels, frames), dtype=np.float32)
        self.lo = 0
        self.hi = 0
        self.lock = threading.Lock()


def _speaker(loaded: LoadedVoice, utterance: Utterance) -> dict[str, Any]:
    if not loaded.has_speaker_input:
        return {}
    return {SPEAKER_INPUT: np.array([utterance.speaker_id or 0], dtype=np.int64)}


def _phoneme_ids(
    phonemes: tuple[str, ...], config: PiperConfig
) -> tuple[tuple[str, ...], list[int], np.ndarray[Any, np.dtype[np.int64]]]:
    """Piper's id sequence (BOS, each phoneme + PAD, EOS) and, per id, its entry in ``phonemes``.

    The returned phonemes are ``(BOS, *known phonemes, EOS)``; unknown phonemes are dropped with a
    warning (as Piper does), keeping an empty entry so word ranges still line up.
    """
    id_map = config.phoneme_id_map
    pad = list(id_map[_PAD])
    ids: list[int] = [*id_map[_BOS], *pad]
    owner: list[int] = [0] * len(ids)
    for index, phoneme in enumerate(phonemes, start=1):
        mapped = id_map.get(phoneme)
        if mapped is None:
            log.warning("phoneme %r is not in the voice's id map; skipped", phoneme)
            continue
        ids.extend([*mapped, *pad])
        owner.extend([index] * (len(mapped) + len(pad)))
    eos_index = len(phonemes) + 1
    ids.extend(id_map[_EOS])
    owner.extend([eos_index] * len(id_map[_EOS]))
    return (_BOS, *phonemes, _EOS), ids, np.array(owner, dtype=np.int64)
