"""A rendered phrase as the phrase cache keeps it, its key, and its bytes for a shared tier.

A ``CachedPhrase`` is one engine request's result: the utterance's timing (words, phonemes and
their frames; not its latents, which only rendering needs) and the audio of its frames from
``start_frame`` (``voxflow.runtime.handover.lead_in``, where every rendering of an utterance starts)
to its end, at the voice's native rate, exactly as the engine rendered it. Seams, resampling and
encoding come after the cache, so one entry serves every output format and every place in a reply.

The key is a digest of everything that changes that audio: the engine and its model and config
files (their sha256, so a replaced model never meets an old entry), the voice, speaker, speed,
noise and seed, and the request's text (normalized and segmented already: the text the engine
reads) with the text its text stage reads on into (``SegmentRequest.lookahead``: a lead said as
the start of one sentence sounds unlike the same words starting another). Whether a request is
a lead, a takeover or a whole segment does not change the audio of the utterance, so it is not
part of the key. A request with no seed draws fresh noise; a cached rendering of it is one such
draw, as good as another.
"""

from __future__ import annotations

import hashlib
import json
import struct
import threading
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from voxflow.engines.base import FloatArray, Utterance, VoiceSettings, WordSpan

__all__ = [
    "CachedPhrase",
    "ModelFingerprints",
    "PhraseFormatError",
    "decode_phrase",
    "encode_phrase",
    "phrase_key",
]

KEY_VERSION = 3  # bump when the key's fields or the audio an engine makes for them change
_WIRE_VERSION = 2
_HEADER = struct.Struct("<BI")  # wire version, JSON header length; then the header, then audio


class PhraseFormatError(ValueError):
    """Bytes from a shared tier that are not a phrase this version wrote."""


@dataclass(frozen=True, eq=False)
class CachedPhrase:
    """See the module docstring. ``audio`` covers frames ``[start_frame, utterance.num_frames)``."""

    utterance: Utterance
    start_frame: int
    audio: FloatArray = field(repr=False)

    def __post_init__(self) -> None:
        frames = self.utterance.num_frames - self.start_frame
        if frames < 0 or self.audio.shape != (frames * self.utterance.samples_per_frame,):
            raise ValueError(
                f"audio of {self.audio.shape} samples does not cover frames "
                f"[{self.start_frame}, {self.utterance.num_frames})"
            )

    @property
    def nbytes(self) -> int:
        return int(self.audio.nbytes) + 64 * len(self.utterance.words) + len(self.utterance.text)

    def window(self, start_frame: int, end_frame: int) -> FloatArray:
        """The audio of frames ``[start_frame, end_frame)``, as the engine rendered them."""
        if not self.start_frame <= start_frame <= end_frame <= self.utterance.num_frames:
            raise ValueError(
                f"window [{start_frame}, {end_frame}) outside the cached frames "
                f"[{self.start_frame}, {self.utterance.num_frames})"
            )
        hop = self.utterance.samples_per_frame
        lo = (start_frame - self.start_frame) * hop
        # A copy: what receives a window may work on it in place, and the cache's copy is
        # every later listener's.
        return self.audio[lo : lo + (end_frame - start_frame) * hop].copy()

    @classmethod
    def of(cls, utterance: Utterance, start_frame: int, audio: FloatArray) -> CachedPhrase:
        """A phrase from a rendering: the utterance is kept without its latents."""
        return cls(_without_latents(utterance), start_frame, audio)


def _without_latents(utterance: Utterance) -> Utterance:
    # An empty (0, frames) array keeps ``num_frames`` and costs nothing; a cached phrase is never
    # rendered again, so the latents (about as large as the audio) would be dead weight.
    return Utterance(
        text=utterance.text,
        voice=utterance.voice,
        sample_rate=utterance.sample_rate,
        samples_per_frame=utterance.samples_per_frame,
        latents=np.zeros((0, utterance.num_frames), dtype=np.float32),
        phonemes=utterance.phonemes,
        phoneme_frames=utterance.phoneme_frames,
        words=utterance.words,
        speaker_id=utterance.speaker_id,
        onset_frames=utterance.onset_frames,
    )


class ModelFingerprints:
    """sha256 of a voice's model and config files, computed once per path pair (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._known: dict[tuple[Path, Path], str] = {}

    def known(self, model_path: Path, config_path: Path) -> str | None:
        """The fingerprint if it was computed already (never reads a file)."""
        with self._lock:
            return self._known.get((model_path, config_path))

    def of(self, model_path: Path, config_path: Path) -> str:
        paths = (model_path, config_path)
        with self._lock:
            known = self._known.get(paths)
            if known is None:
                digest = hashlib.sha256()
                for path in paths:
                    with path.open("rb") as file:
                        digest.update(hashlib.file_digest(file, "sha256").digest())
                known = self._known[paths] = digest.hexdigest()
            return known


def phrase_key(
    engine: str,
    fingerprint: str,
    text: str,
    voice: str,
    settings: VoiceSettings,
    lookahead: str = "",
) -> str:
    """The key of a rendering: a hex digest of everything that changes its audio (the text
    its text stage reads on into, ``lookahead``, too)."""
    fields = [
        KEY_VERSION,
        engine,
        fingerprint,
        voice,
        settings.speaker_id,
        repr(float(settings.speed)),
        None if settings.noise_scale is None else repr(float(settings.noise_scale)),
        None if settings.noise_w is None else repr(float(settings.noise_w)),
        settings.seed,
        text,
        lookahead,
    ]
    return hashlib.sha256(json.dumps(fields, ensure_ascii=False).encode()).hexdigest()


def encode_phrase(phrase: CachedPhrase) -> bytes:
    """The phrase as bytes for a shared tier: a small JSON header, then the float32 samples."""
    u = phrase.utterance
    header = {
        "text": u.text,
        "voice": u.voice,
        "sample_rate": u.sample_rate,
        "samples_per_frame": u.samples_per_frame,
        "frames": u.num_frames,
        "start_frame": phrase.start_frame,
        "phonemes": list(u.phonemes),
        "phoneme_frames": [int(n) for n in u.phoneme_frames],
        "words": [[w.word, w.char_start, w.char_end, w.start_frame, w.end_frame] for w in u.words],
        "speaker_id": u.speaker_id,
        "onset_frames": u.onset_frames,
    }
    head = json.dumps(header, ensure_ascii=False, allow_nan=False).encode()
    audio = np.ascontiguousarray(phrase.audio, dtype="<f4").tobytes()
    return _HEADER.pack(_WIRE_VERSION, len(head)) + head + audio


def decode_phrase(data: bytes) -> CachedPhrase:
    """The phrase ``encode_phrase`` wrote; ``PhraseFormatError`` for anything else."""
    try:
        version, length = _HEADER.unpack_from(data)
        if version != _WIRE_VERSION:
            raise PhraseFormatError(f"phrase format {version}, expected {_WIRE_VERSION}")
        body = _HEADER.size + length
        header = json.loads(data[_HEADER.size : body])
        audio = np.frombuffer(data, dtype="<f4", offset=body).astype(np.float32)
        utterance = Utterance(
            text=str(header["text"]),
            voice=str(header["voice"]),
            sample_rate=int(header["sample_rate"]),
            samples_per_frame=int(header["samples_per_frame"]),
            latents=np.zeros((0, int(header["frames"])), dtype=np.float32),
            phonemes=tuple(str(p) for p in header["phonemes"]),
            phoneme_frames=np.asarray(header["phoneme_frames"], dtype=np.int64),
            words=tuple(
                WordSpan(str(w), int(a), int(b), int(s), int(e))
                for w, a, b, s, e in header["words"]
            ),
            speaker_id=None if header["speaker_id"] is None else int(header["speaker_id"]),
            onset_frames=int(header["onset_frames"]),
        )
        return CachedPhrase(utterance, int(header["start_frame"]), audio)
    except PhraseFormatError:
        raise
    except (struct.error, ValueError, KeyError, TypeError) as error:
        raise PhraseFormatError(f"not a cached phrase: {error}") from error
