"""``voxflow bench-kokoro-profile`` on the real model: a short sentence profiled in windows and
whole; the naming of the parts and the multiply-adds on their own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from voxflow import SplitCache
from voxflow.cli.main import main
from voxflow.engines.registry import VoiceRegistry
from voxflow_bench import kokoro_profile
from voxflow_bench.kokoro_profile import KokoroProfile, format_profile, part_of, profile_kokoro

TEXT = "Your table for four is booked."


@pytest.fixture(scope="module")
def profiles(
    kokoro_registry: VoiceRegistry, split_cache: SplitCache | None
) -> tuple[KokoroProfile, KokoroProfile]:
    return profile_kokoro(kokoro_registry, [TEXT], window_frames=64, split_cache=split_cache)


def test_each_mode_profiles_both_stages_and_the_same_audio(
    profiles: tuple[KokoroProfile, KokoroProfile],
) -> None:
    windows, whole = profiles
    assert (windows.mode, whole.mode) == ("windows", "whole")
    assert windows.audio_s == whole.audio_s > 1.0
    for profile in profiles:
        stages = {node.stage for node in profile.nodes}
        assert stages == {"prosody", "decoder"}
        # The parts and the op types each add up to every node's time.
        for key in ("part", "op"):
            assert sum(s for _, s, _ in profile.by(key)) == pytest.approx(profile.node_s)
        # Convolutions carry the multiply-adds, and run at a rate a CPU reaches.
        assert 0 < profile.best_rate() < 5e12
        assert 0 < profile.floor_s() < profile.node_s / profile.audio_s
    # Windows decode more frames (their context) than one whole run, never fewer.
    decoder = [sum(n.macs for n in p.nodes if n.stage == "decoder") for p in profiles]
    assert decoder[0] >= decoder[1] > 0


def test_the_table_names_the_model_s_parts(profiles: tuple[KokoroProfile, KokoroProfile]) -> None:
    text = format_profile(*profiles)
    for part in (
        "generator: stage 1 resblocks, convolutions",
        "generator: stage 2 resblocks, Snake",
        "generator: harmonic source's resblocks, convolutions",
        "generator: upsampling (ConvTranspose)",
        "decoder: frame-rate blocks (encode, decode)",
        "prosody: text encoder (ALBERT)",
    ):
        assert f"  {part} " in text
    assert "MatMulInteger" in text and "Sin" in text
    data = profiles[0].as_dict()
    assert json.loads(json.dumps(data))["parts"][0]["cpu_s_per_audio_s"] > 0


@pytest.mark.parametrize(
    ("stage", "name", "op", "part"),
    [
        ("decoder", "/decoder/decoder/generator/resblocks.4/Sin_3_kernel_time", "Sin",
         "generator: stage 2 resblocks, Snake"),
        ("decoder", "/decoder/decoder/generator/resblocks.1/adain2.0/Mul_2_kernel_time", "Mul",
         "generator: stage 1 resblocks, AdaIN"),
        ("decoder", "/decoder/decoder/generator/resblocks.2/convs1.0/Conv_quant_kernel_time",
         "ConvInteger", "generator: stage 1 resblocks, convolutions"),
        ("decoder",
         "/decoder/decoder/generator/resblocks.5/convs1.2/Conv_quant/int8_weights/product"
         "_kernel_time", "MatMulInteger", "generator: stage 2 resblocks, convolutions"),
        ("decoder",
         "/decoder/decoder/generator/noise_res.0/convs2.1/Conv_quant/int8_weights/im2col"
         "_kernel_time", "Concat", "generator: harmonic source's resblocks, convolutions"),
        ("decoder", "decoder.decoder.generator.noise_res.1.convs2.0.bias_quantizedbias_add",
         "Add", "generator: harmonic source's resblocks, convolutions"),
        ("decoder", "/decoder/decoder/generator/ups.1/ConvTranspose_kernel_time",
         "ConvTranspose", "generator: upsampling (ConvTranspose)"),
        ("decoder", "norm12_own_kernel_time", "Sub", "decoder: statistics blend (streaming)"),
        ("decoder", "/decoder/decoder/decode.3/pool/ConvTranspose_kernel_time", "ConvTranspose",
         "decoder: frame-rate blocks (encode, decode)"),
        ("prosody", "/encoder/bert/encoder/x/MatMul_kernel_time", "MatMul",
         "prosody: text encoder (ALBERT)"),
    ],
)  # fmt: skip
def test_a_node_s_name_says_its_part(stage: str, name: str, op: str, part: str) -> None:
    assert part_of(stage, name, op) == part


def test_multiply_adds_come_from_the_shapes_or_the_graph_s_weights() -> None:
    def event(op: str, inputs: list[list[int]], outputs: list[list[int]]) -> dict[str, object]:
        shapes = [{"float": s} for s in inputs]
        return {
            "name": "n_kernel_time",
            "args": {"op_name": op, "input_type_shape": shapes,
                     "output_type_shape": [{"float": s} for s in outputs]},
        }  # fmt: skip

    conv = event("ConvInteger", [[1, 128, 100], [128, 128, 3]], [[1, 128, 100]])
    assert kokoro_profile._macs(conv, {}) == 128 * 100 * 128 * 3
    # A ConvTranspose's weight is an initializer the profile leaves out: the graph's shape.
    up = event("ConvTranspose", [[1, 256, 10], [128]], [[1, 128, 60]])
    assert kokoro_profile._macs(up, {"n": [256, 128, 12]}) == 256 * 10 * 128 * 12
    assert kokoro_profile._macs(event("MatMul", [[1, 7, 64], [64, 32]], [[1, 7, 32]]), {}) == (
        7 * 64 * 32
    )
    assert kokoro_profile._macs(event("Sin", [[1, 9]], [[1, 9]]), {}) == 0


def test_the_command_writes_its_table_and_json(
    kokoro_registry: VoiceRegistry,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    profiles: tuple[KokoroProfile, KokoroProfile],
) -> None:
    seen: list[tuple[int, int, int]] = []

    def profiled(
        _registry: VoiceRegistry,
        texts: list[str],
        _voice: str,
        window: int,
        threads: int,
        split_cache: SplitCache | None = None,
    ):  # type: ignore[no-untyped-def]
        seen.append((len(texts), window, threads))
        assert split_cache is not None  # the server's, as VOXFLOW_SPLIT_CACHE says
        return profiles

    # The command imports profile_kokoro from its module when it runs: replace it there.
    monkeypatch.setattr(kokoro_profile, "profile_kokoro", profiled)
    out = tmp_path / "profile.json"
    argv = ["bench-kokoro-profile", "--replies", "2", "--window-frames", "96", "--threads", "2"]
    assert main([*argv, "--json", str(out)]) == 0
    assert seen == [(2, 96, 2)]
    assert "Kokoro profile: " in capsys.readouterr().out
    assert set(json.loads(out.read_text())) == {"windows", "whole"}
