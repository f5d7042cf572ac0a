"""Kokoro-82M engine: the quality tier, streamed inside a segment like Piper.

``prepare`` phonemizes (espeak-ng for English, as for Piper voices; misaki's G2P for Japanese:
``voxflow.engines.phonemizers``) and runs the prosody stage once on the
whole segment (text encoder, durations, F0 and energy; a few per cent of the work), leaving the
decoder's input in the ``Utterance``, at 80 frames a second (300 samples at 24 kHz each): the
aligned text features (512 rows, each alignment frame written twice, since the decoder reads
them at half the F0 curve's rate), then the F0 curve and the energy curve. ``render`` runs the
decoder on one window with ``context_frames`` of context on each side, its edges rounded out to
even frames (``voxflow.engines.kokoro.graph`` splits the model and says why a window needs more
than context):

* the harmonic source's sines come from the whole utterance's F0 (``Phases``), so every window
  has the phase a whole run has;
* each normalisation layer blends a running estimate of the utterance's statistics with the
  window's own (``RunningStats``). The estimate starts from the pack's prior, shipped with
  voxflow (``voxflow.engines.kokoro.prior``): loading a voice reads its pack and nothing more.

A stream is therefore not bit-equal to a whole run, as it is for Piper: docs/benchmarks.md
states the distance, and ``voxflow bench-intelligibility`` compares how well a recogniser
understands both. A window that covers the whole utterance is the original model's run.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import onnx
import onnxruntime as ort

from voxflow.engines import conv2d, graph_split, integer_convs, sessions
from voxflow.engines.base import FloatArray, Utterance, VoiceInfo, VoiceSettings, WordSpan
from voxflow.engines.kokoro import graph
from voxflow.engines.kokoro.graph import (
    ASR,
    AUDIO,
    DURATIONS,
    ENERGY,
    F0,
    PRIOR_WEIGHT,
    SINES,
    KokoroSplit,
    prior_mean,
    prior_meansq,
    split_kokoro_model,
    window_mean,
    window_meansq,
)
from voxflow.engines.kokoro.model import part_paths, read_model
from voxflow.engines.kokoro.phonemes import MAX_IDS, PAD, kokoro_ids, respelling_for
from voxflow.engines.kokoro.prior import PRIOR_FILE, Priors, load_priors, mean_stats
from voxflow.engines.kokoro.running import SAMPLES_PER_FRAME, Phases, RunningStats, Stats
from voxflow.engines.kokoro.voices import (
    PACK_ROWS,
    SAMPLE_RATE,
    blend_packs,
    load_blend,
    parse_voice,
)
from voxflow.engines.phonemizers import phonemizer_for
from voxflow.engines.piper import TextTooLongError
from voxflow.engines.registry import VoiceRegistry
from voxflow.engines.sessions import ByThreads, cpu_session, shrinking_run_options
from voxflow.engines.split_cache import SplitCache, cached_cut
from voxflow.text.language import text_language_of

log = logging.getLogger(__name__)

ASR_CHANNELS = 512
F0_ROW = ASR_CHANNELS
ENERGY_ROW = ASR_CHANNELS + 1
# Where an utterance's speech begins, read off its predicted energy (``onset_frames``): the
# first frame of the rise into its first word above this share of the way from the leading
# silence's level to the word's, less the frames the decoder spreads a sound back over. The
# word's first frame is late for a start (the leading pad's frames carry the onset of a
# fricative or a stop's voicing: a median of 4 to 9 frames before it on agent replies, some
# 30 and more), and a rendering cut inside that onset loses it ("Great" faded in on its g).
ONSET_RISE = 0.4
ONSET_SPREAD_FRAMES = 2
# Never closer to the first word than this (Piper's lead-in).
MIN_ONSET_FRAMES = 3
_BOS, _EOS = "^", "$"


@dataclass(frozen=True)
class KokoroSettings:
    """How the Kokoro engine runs ONNX Runtime and cuts windows."""

    intra_op_threads: int = 1
    # Sessions with this many threads too, for jobs the scheduler runs alone (a stream's first
    # audio): as for Piper. 0 or 1: none.
    wide_threads: int = 2
    # Frames of context on each side of a window (12.5 ms each). The decoder's frame-rate
    # blocks reach about 20 frames each way. English streams were understood alike with 4, 8
    # and 16; a Japanese one (jm_kumo) lost kana at window edges with 4 that 16 kept, but 16
    # cost the calls a third more CPU and their gaps (docs/benchmarks.md, Japanese), so 4.
    context_frames: int = 4
    # The weight of the prior statistics in the running blend, in frames (1.9 s of audio): the
    # best of 150, 400 and 1,000 in the intelligibility check (docs/benchmarks.md, Kokoro).
    prior_frames: float = 150.0
    prior_file: Path = PRIOR_FILE
    # Where the cut and optimized stages are kept between starts (None: made at every load;
    # engines.split_cache).
    split_cache: SplitCache | None = None

    def __post_init__(self) -> None:
        if self.intra_op_threads < 1 or self.wide_threads < 0 or self.context_frames < 0:
            raise ValueError("threads must be >= 1 and context_frames >= 0")
        if self.prior_frames < 0:
            raise ValueError("prior_frames must be >= 0")


class StageSessions(Protocol):
    """The prosody stage's and the decoder's sessions, for one thread count."""

    @property
    def prosody(self) -> ort.InferenceSession: ...

    @property
    def decoder(self) -> ort.InferenceSession: ...


class StageSets(Protocol):
    """Sessions per thread count (``sessions.ByThreads``, or a profiler's stand-in)."""

    def get(self, threads: int | None) -> StageSessions: ...


class _Stages:
    """The prosody stage and the decoder, run with ``threads`` intra-op threads."""

    def __init__(
        self, split: KokoroSplit, threads: int, optimized: Callable[[str, int], Path | None]
    ) -> None:
        self.prosody = cpu_session(
            split.prosody_stage, threads, optimized("prosody_stage", threads)
        )
        self.decoder = cpu_session(
            split.decoder_stage, threads, optimized("decoder_stage", threads)
        )


class _Model:
    """The split model, its sessions (one set per thread count) and the decoder's outputs."""

    def __init__(self, settings: KokoroSettings) -> None:
        # The parts are checked against the model's digest when cut; a part that changes after
        # that changes the cache file's name too.
        signed = integer_convs.signed_products_exact()
        if not signed:
            log.info(
                "this CPU's uint8-by-int8 integer products saturate (x86 without VNNI): "
                "Kokoro's convolutions run on uint8 weights, exact but slower"
            )
        cached = cached_cut(
            settings.split_cache,
            KokoroSplit,
            part_paths(),
            [graph, graph_split, conv2d, integer_convs, sessions],
            lambda: split_kokoro_model(onnx.load_model_from_string(read_model()), signed),
            variant="int8 weights" if signed else "uint8 weights",
        )
        split = cached.value
        # The stages' graphs: each thread count's sessions are made from them when first asked.
        self.split = split
        self.layers = split.norm_layers
        self.outputs = [AUDIO] + [
            name for i in range(self.layers) for name in (window_mean(i), window_meansq(i))
        ]
        self.run_options = shrinking_run_options()
        self._stages: StageSets = ByThreads(
            lambda threads: _Stages(split, threads, cached.optimized),
            settings.intra_op_threads,
            settings.wide_threads,
        )

    def stages(self, threads: int | None) -> StageSessions:
        return self._stages.get(threads)

    def swap_stages(self, stages: StageSets) -> StageSets:
        """Render with ``stages`` from now on (``kokoro.profiling``); the ones it replaced."""
        own, self._stages = self._stages, stages
        return own

    def decode(
        self,
        stages: StageSessions,
        latents: FloatArray,
        lo: int,
        hi: int,
        style: FloatArray,
        sines: FloatArray,
        prior: Stats,
        prior_weight: float,
    ) -> tuple[FloatArray, Stats]:
        """Audio of frames ``[lo, hi)`` (even edges) of an utterance's latents, and that
        stretch's own statistics per layer."""
        feeds: dict[str, Any] = {
            ASR: np.ascontiguousarray(latents[np.newaxis, :ASR_CHANNELS, lo:hi:2]),
            F0: np.ascontiguousarray(latents[np.newaxis, F0_ROW, lo:hi]),
            ENERGY: np.ascontiguousarray(latents[np.newaxis, ENERGY_ROW, lo:hi]),
            "style": style[np.newaxis],
            SINES: sines[np.newaxis],
            PRIOR_WEIGHT: np.array([prior_weight], dtype=np.float32),
        }
        for i, (mean, meansq) in enumerate(prior):
            feeds[prior_mean(i)] = mean
            feeds[prior_meansq(i)] = meansq
        results = stages.decoder.run(self.outputs, feeds, self.run_options)
        own = [(results[1 + 2 * i], results[2 + 2 * i]) for i in range(self.layers)]
        return results[0].reshape(-1), own


class _Voice:
    """A loaded voice: its pack (or blend), phonemizer and prior statistics."""

    def __init__(self, info: VoiceInfo, pack: FloatArray, prior: Stats) -> None:
        self.info = info
        self.pack = pack
        # A blend speaks with the accent of its first pack (all of one language).
        self.phonemizer = phonemizer_for(info.language)
        self.respell = respelling_for(text_language_of(info.language))
        self.prior = prior


class KokoroEngine:
    """The ``Engine`` for ``kokoro:`` voices. Thread-safe; the model loads on first use.

    A voice loads in the time it takes to read its pack (or a blend's packs); its prior is the
    shipped one (a blend's: the weighted mean of its packs'). The engine keeps every pack it
    has read and the ``MAX_BLENDS`` most recently used blends.
    """

    MAX_BLENDS = 64

    def __init__(self, registry: VoiceRegistry, settings: KokoroSettings | None = None) -> None:
        self._registry = registry
        self._settings = settings or KokoroSettings()
        self._model: _Model | None = None
        self._model_lock = threading.Lock()
        self._priors: Priors | None = None
        self._packs: OrderedDict[str, _Voice] = OrderedDict()  # never dropped (28 at most)
        self._blends: OrderedDict[str, _Voice] = OrderedDict()
        self._voices_lock = threading.Lock()  # guards the two dicts, never held while working
        self._running: weakref.WeakKeyDictionary[Utterance, RunningStats] = (
            weakref.WeakKeyDictionary()
        )
        self._running_lock = threading.Lock()

    @property
    def settings(self) -> KokoroSettings:
        return self._settings

    def voices(self) -> list[VoiceInfo]:
        return [v for v in self._registry.list() if v.engine == "kokoro"]

    def voice_info(self, voice: str) -> VoiceInfo:
        return self._registry.get(voice)

    def model(self) -> _Model:
        """The split model (loaded, checked and split once: a few seconds)."""
        model = self._model
        if model is not None:
            return model
        with self._model_lock:
            if self._model is None:
                log.info("loading the Kokoro model")
                self._model = _Model(self._settings)
            return self._model

    def load(self, voice: str) -> _Voice:
        """Load (once) and return a voice, with the model and the priors: a pack is read from
        its file, a blend mixes its packs (and their priors)."""
        info = self._kokoro_info(voice)
        blend = parse_voice(info.name)
        voices = self._packs if len(blend.parts) == 1 else self._blends
        with self._voices_lock:
            loaded = voices.get(info.name)
            if loaded is not None:
                voices.move_to_end(info.name)
                return loaded
        # Read outside the lock (half a megabyte a pack); of two threads that read a new voice
        # at once, the first to store it wins.
        packs = load_blend(blend, self._registry.kokoro_packs())
        priors = self.priors()
        prior = mean_stats(
            [priors.for_pack(packs[name].digest, info.language) for name, _ in blend.parts],
            [weight for _, weight in blend.parts],
        )
        read = _Voice(info, blend_packs(blend, packs), prior)
        with self._voices_lock:
            loaded = voices.setdefault(info.name, read)
            voices.move_to_end(info.name)
            while len(self._blends) > self.MAX_BLENDS:
                self._blends.popitem(last=False)
        if loaded is read:
            log.info("loaded voice %s", info.name)
        return loaded

    def _kokoro_info(self, voice: str) -> VoiceInfo:
        info = self._registry.get(voice)
        if info.engine != "kokoro":
            raise ValueError(f"{info.name} is not a Kokoro voice")
        return info

    def priors(self) -> Priors:
        """The shipped priors (``settings.prior_file``), read once with the model."""
        priors = self._priors
        if priors is None:
            layers = self.model().layers
            with self._model_lock:
                if self._priors is None:
                    self._priors = load_priors(self._settings.prior_file, layers)
                priors = self._priors
        return priors

    def whole_statistics(self, text: str, voice: str) -> Stats:
        """The normalisation statistics of ``text`` rendered whole by ``voice``, with the
        original layers (the prior's weight 0): what ``voxflow.engines.kokoro.calibrate``
        averages into the prior."""
        model = self.model()
        threads = max(self._settings.intra_op_threads, self._settings.wide_threads)
        info = self._kokoro_info(voice)
        # No prior: a whole rendering does not use one (and this computes them).
        blend = parse_voice(info.name)
        packs = load_blend(blend, self._registry.kokoro_packs())
        unprimed = _Voice(info, blend_packs(blend, packs), [])
        utterance = self._prepare(model, unprimed, text, VoiceSettings(), threads)
        frames = utterance.num_frames
        zero = np.zeros((1, 1, 1), np.float32)
        _, own = model.decode(
            model.stages(threads),
            utterance.latents,
            0,
            frames,
            _style(utterance),
            Phases(utterance.latents[F0_ROW]).sines(0, frames),
            [(zero, zero)] * model.layers,
            0.0,
        )
        return own

    def prepare(
        self, text: str, voice: str, settings: VoiceSettings, threads: int | None = None
    ) -> Utterance:
        loaded = self.load(voice)
        return self._prepare(self.model(), loaded, text, settings, threads)

    def _prepare(
        self,
        model: _Model,
        voice: _Voice,
        text: str,
        settings: VoiceSettings,
        threads: int | None,
    ) -> Utterance:
        if settings.speaker_id not in (None, 0):
            raise ValueError(f"voice {voice.info.name} has a single speaker")
        phonemized = voice.phonemizer.phonemize(text)
        tokens = kokoro_ids(phonemized.phonemes, voice.respell)
        if len(tokens.ids) > MAX_IDS:
            raise TextTooLongError(len(tokens.ids), MAX_IDS)
        phonemes = (_BOS, *phonemized.phonemes, _EOS)
        if not tokens.ids:
            return Utterance(
                text=text,
                voice=voice.info.name,
                sample_rate=SAMPLE_RATE,
                samples_per_frame=SAMPLES_PER_FRAME,
                latents=np.zeros((ENERGY_ROW + 1, 0), dtype=np.float32),
                phonemes=(),
                phoneme_frames=np.zeros(0, dtype=np.int64),
                words=(),
                conditioning=voice.pack[0],
                onset_frames=0,
            )
        style = voice.pack[min(len(tokens.ids), PACK_ROWS) - 1]
        asr, f0, energy, durations = model.stages(threads).prosody.run(
            [ASR, F0, ENERGY, DURATIONS],
            {
                "tokens": np.array([[PAD, *tokens.ids, PAD]], dtype=np.int64),
                "style": style[np.newaxis],
                "speed": np.array([settings.speed], dtype=np.float32),
            },
            model.run_options,
        )
        # Durations are in the alignment's frames; the generator runs at twice that rate.
        token_frames = 2 * durations.reshape(-1).astype(np.int64)
        owner = np.concatenate([[0], tokens.owner + 1, [len(phonemes) - 1]])
        phoneme_frames = np.bincount(owner, weights=token_frames, minlength=len(phonemes)).astype(
            np.int64
        )
        edges = np.concatenate([[0], np.cumsum(phoneme_frames)])
        words = tuple(
            WordSpan(
                word=w.word,
                char_start=w.char_start,
                char_end=w.char_end,
                start_frame=int(edges[start + 1]),
                end_frame=int(edges[end + 1]),
            )
            for w, (start, end) in zip(phonemized.words, phonemized.word_phonemes, strict=True)
        )
        latents = np.concatenate(
            [np.repeat(asr[0], 2, axis=1), f0, energy], axis=0, dtype=np.float32
        )
        return Utterance(
            text=text,
            voice=voice.info.name,
            sample_rate=SAMPLE_RATE,
            samples_per_frame=SAMPLES_PER_FRAME,
            latents=np.ascontiguousarray(latents),
            phonemes=phonemes,
            phoneme_frames=phoneme_frames,
            words=words,
            conditioning=style,
            onset_frames=_onset_frames(energy[0], words[0].start_frame if words else 0),
        )

    def render(
        self, utterance: Utterance, start_frame: int, end_frame: int, threads: int | None = None
    ) -> FloatArray:
        total = utterance.num_frames
        if not 0 <= start_frame < end_frame <= total:
            raise ValueError(f"window [{start_frame}, {end_frame}) outside [0, {total})")
        voice = self.load(utterance.voice)
        model = self.model()
        context = self._settings.context_frames
        # Even edges: the decoder reads the text features at half the rate of the frames.
        lo = max(0, start_frame - context) // 2 * 2
        hi = min(total, (end_frame + context + 1) // 2 * 2)
        running = self._running_for(utterance, voice)
        prior, weight = running.blend_for(end_frame - start_frame, hi - lo)
        audio, own = model.decode(
            model.stages(threads),
            utterance.latents,
            lo,
            hi,
            _style(utterance),
            running.phases.sines(lo, hi),
            prior,
            weight,
        )
        running.take_in(own, end_frame - start_frame)
        window = audio[
            (start_frame - lo) * SAMPLES_PER_FRAME : (end_frame - lo) * SAMPLES_PER_FRAME
        ]
        clipped: FloatArray = np.clip(window, -1.0, 1.0).astype(np.float32, copy=False)
        return clipped

    def _running_for(self, utterance: Utterance, voice: _Voice) -> RunningStats:
        with self._running_lock:
            running = self._running.get(utterance)
            if running is None:
                running = RunningStats(
                    voice.prior, self._settings.prior_frames, utterance.latents[F0_ROW]
                )
                self._running[utterance] = running
            return running


def _onset_frames(energy: FloatArray, first_word: int) -> int:
    """Frames before ``first_word`` at which speech begins, by the predicted ``energy`` curve
    (its frames, the decoder's; see ``ONSET_RISE``)."""
    if first_word <= MIN_ONSET_FRAMES or first_word >= len(energy):
        return min(first_word, MIN_ONSET_FRAMES)
    floor = float(np.median(energy[: first_word // 2]))
    level = floor + ONSET_RISE * (float(energy[first_word]) - floor)
    start = first_word
    while start > 0 and energy[start - 1] > level:
        start -= 1
    return max(MIN_ONSET_FRAMES, first_word - start + ONSET_SPREAD_FRAMES)


def _style(utterance: Utterance) -> FloatArray:
    if utterance.conditioning is None:
        raise ValueError(f"utterance of {utterance.voice} has no style (not a Kokoro utterance)")
    return utterance.conditioning
