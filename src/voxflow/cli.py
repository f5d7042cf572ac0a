"""The ``voxflow`` command line: say, voices, chunks, serve, the benchmarks and the soak."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TextIO

from voxflow import __version__
from voxflow.audio.pcm import write_wav
from voxflow.bench.corpus import load_corpus
from voxflow.bench.encoders import format_table as format_encoder_table
from voxflow.bench.encoders import run_encoder_bench
from voxflow.bench.engine import format_table, run_engine_bench, summary
from voxflow.bench.options import SECTIONS
from voxflow.bench.server import BenchOptions, format_report, run_server_bench_sync, ttfa_plot
from voxflow.bench.soak_command import add_soak_parser, soak_command
from voxflow.client import VoxflowConnectionError
from voxflow.config import ServerSettings
from voxflow.engines import kokoro_model
from voxflow.engines.base import Engine, VoiceNotFoundError, VoiceSettings
from voxflow.engines.kokoro_voices import default_voices_dir, find_packs
from voxflow.engines.registry import VoiceRegistry
from voxflow.engines.router import build_engine
from voxflow.runtime.scheduler import SchedulerSettings
from voxflow.say import LocalSpeaker
from voxflow.serve_command import add_serve_parser, serve
from voxflow.session.session import SessionConfig, StartOptions
from voxflow.text.buffer import ChunkingConfig, Strategy, TextBuffer
from voxflow.text.lexicon import Lexicon
from voxflow.text.normalize import NormalizationMode, Normalizer, normalize_lines

log = logging.getLogger("voxflow")


def _schedule(value: str) -> tuple[int, ...]:
    try:
        entries = tuple(int(part) for part in value.split(",") if part.strip())
    except ValueError as error:
        raise argparse.ArgumentTypeError(
            f"schedule must be comma-separated integers: {value}"
        ) from (error)
    if not entries:
        raise argparse.ArgumentTypeError("schedule must have at least one entry")
    return entries


def _add_chunking_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--chunking",
        choices=[s.value for s in Strategy],
        default=Strategy.ADAPTIVE.value,
        help="segmentation strategy (default: adaptive)",
    )
    parser.add_argument("--schedule", type=_schedule, help="chunk length schedule, e.g. 50,120,200")
    parser.add_argument("--auto", action="store_true", help="auto mode: emit at every sentence")
    parser.add_argument("--max-chars", type=int, help="hard cap on a segment's length")


def _add_normalization_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--normalization",
        choices=[m.value for m in NormalizationMode],
        default=NormalizationMode.AUTO.value,
        help="text normalization (numbers, dates, units ...; default auto = on)",
    )
    parser.add_argument("--lexicon", type=Path, help="pronunciation lexicon file")


def _add_prosody_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    prosody = commands.add_parser(
        "bench-prosody",
        help="what the server's cuts do to prosody: streamed vs whole-sentence rendering",
    )
    prosody.add_argument("--voice", help="voice name (default: the server's default voice)")
    prosody.add_argument("--corpus", type=Path, help="replies file (default: the bundled corpus)")
    prosody.add_argument("--replies", type=int, help="measure only the first N replies")
    prosody.add_argument("--tokens", action="store_true", help="also send each reply as LLM tokens")
    prosody.add_argument("--token-rate", type=float, default=50.0, help="LLM tokens/s")
    prosody.add_argument(
        "--noise",
        choices=["off", "seeded"],
        default="off",
        help="off: noise_scale = noise_w = 0 (default); seeded: the voice's noise, seeded",
    )
    prosody.add_argument("--seed", type=int, default=1, help="seed (default %(default)s)")
    prosody.add_argument(
        "--silence-db", type=float, default=-50.0, help="silence threshold, dBFS on 5 ms frames"
    )
    prosody.add_argument("--workers", type=int, help="synthesis threads (default: one per core)")
    prosody.add_argument("--json", type=Path, help="also write everything as JSON here")


def _normalizer(args: argparse.Namespace) -> Normalizer:
    return Normalizer(None if args.lexicon is None else Lexicon.from_file(args.lexicon))


def _chunking(args: argparse.Namespace) -> ChunkingConfig:
    options: dict[str, object] = {
        "strategy": Strategy(args.chunking),
        "chunk_length_schedule": args.schedule,
        "auto_mode": args.auto,
    }
    if args.max_chars is not None:
        options["max_chars"] = args.max_chars
    return ChunkingConfig(**options)  # type: ignore[arg-type]


def _version() -> str:
    # The installed distribution's version is the one pip and bug reports speak of; a source
    # tree that was never installed falls back to the package's own constant.
    try:
        return version("voxflow")
    except PackageNotFoundError:
        return __version__


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="voxflow", description=__doc__)
    parser.add_argument("--version", action="version", version=f"voxflow {_version()}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log at debug level")
    parser.add_argument("--voices-dir", type=Path, help="directory of extra Piper voices")
    commands = parser.add_subparsers(dest="command", required=True)

    say_cmd = commands.add_parser("say", help="synthesize text to a WAV file")
    say_cmd.add_argument("text", help="text to speak, or - to read it from stdin")
    say_cmd.add_argument("-o", "--output", required=True, help="WAV file to write (- for stdout)")
    say_cmd.add_argument("--voice", help="voice name (default: the bundled voice)")
    say_cmd.add_argument("--speed", type=float, default=1.0, help="speaking rate, 1.0 = normal")
    say_cmd.add_argument("--seed", type=int, help="seed for reproducible output")
    say_cmd.add_argument("--speaker", type=int, help="speaker id of a multi-speaker voice")
    say_cmd.add_argument(
        "--no-stream",
        action="store_true",
        help="render each segment in one run, no lead (the sentence-by-sentence baseline)",
    )
    say_cmd.add_argument("--stats", action="store_true", help="print timing figures as JSON")
    _add_normalization_options(say_cmd)
    _add_chunking_options(say_cmd)

    commands.add_parser("voices", help="list the available voices")

    normalize_cmd = commands.add_parser(
        "normalize",
        help="print the spoken form of text read from stdin, line by line",
        # What a newcomer reads as a typo is what makes espeak-ng say the letter.
        description="Print the spoken form handed to the phonemizer. It is respelled where "
        "espeak-ng would misread the plain letters: 'eigh' is the letter A, so '10am' -> "
        "'ten eigh m' is said 'ten ay em' (espeak-ng reads 'a m' as 'uh em').",
    )
    normalize_cmd.add_argument("--lexicon", type=Path, help="pronunciation lexicon file")

    chunks_cmd = commands.add_parser("chunks", help="print the segments of text read from stdin")
    _add_chunking_options(chunks_cmd)

    cache_bench = commands.add_parser(
        "bench-cache",
        help="the phrase cache's effect on TTFA: hits, misses, Redis hits, a replayed agent trace",
    )
    cache_bench.add_argument(
        "--url", default="http://127.0.0.1:8000", help="server URL (default %(default)s)"
    )
    cache_bench.add_argument(
        "--replica", help="a second server on the same --cache-url: measure Redis hits on it"
    )
    cache_bench.add_argument("--trace", type=Path, help="agent trace file (default: bundled)")
    cache_bench.add_argument("--repeats", type=int, default=5, help="hits per phrase")
    cache_bench.add_argument(
        "--sections", default="hits,replay", help="hits, replay (default %(default)s)"
    )
    cache_bench.add_argument("--json", type=Path, help="also write the results as JSON here")

    encoders_cmd = commands.add_parser(
        "bench-encoders", help="encoder CPU cost and added time to first audio, per format"
    )
    encoders_cmd.add_argument("--repeats", type=int, default=5, help="runs per format (median)")

    bench_cmd = commands.add_parser(
        "bench-engine", help="engine-level TTFA/RTF per input, chunking strategy and render mode"
    )
    bench_cmd.add_argument("--voice", help="voice name (default: the bundled voice)")
    bench_cmd.add_argument("--repeats", type=int, default=5, help="runs per case (median)")
    bench_cmd.add_argument("--threads", type=int, default=1, help="ONNX Runtime intra-op threads")
    bench_cmd.add_argument("--json", type=Path, help="also write the results as JSON here")

    server_bench = commands.add_parser(
        "bench",
        help="TTFA, tokens, cancel and concurrency figures on a corpus of agent replies, against "
        "a running server (and a Wyoming peer)",
    )
    server_bench.add_argument(
        "--url", default="http://127.0.0.1:8000", help="server URL (default %(default)s)"
    )
    server_bench.add_argument(
        "--peer", help="also measure a Wyoming TTS server, e.g. tcp://127.0.0.1:10200"
    )
    server_bench.add_argument("--corpus", type=Path, help="replies file (default: bundled)")
    server_bench.add_argument("--replies", type=int, help="only the first N replies")
    server_bench.add_argument(
        "--sections",
        default=",".join(SECTIONS),
        help="which sections to run (default %(default)s)",
    )
    server_bench.add_argument("--repeats", type=int, default=1, help="full-text runs per reply")
    server_bench.add_argument(
        "--concurrency", type=_schedule, default=(1, 4, 8, 16), help="levels, e.g. 1,4,8,16"
    )
    server_bench.add_argument("--rounds", type=int, default=3, help="rounds per level")
    server_bench.add_argument(
        "--capacity",
        type=_schedule,
        help="also sweep these levels upward until one underruns, e.g. 8,10,12,14,16",
    )
    server_bench.add_argument("--token-rate", type=float, default=50.0, help="LLM tokens/s")
    server_bench.add_argument("--format", default="pcm_24000", help="output format to request")
    server_bench.add_argument(
        "--voice", help="voice to request, e.g. kokoro:af_heart (default: the server's)"
    )
    server_bench.add_argument("--json", type=Path, help="also write the report as JSON here")
    server_bench.add_argument(
        "--plot", type=Path, help="write an SVG of TTFA against first-sentence length here"
    )

    intelligibility = commands.add_parser(
        "bench-intelligibility",
        help="PocketSphinx word error rate of streamed vs whole renderings (needs voxflow[dev])",
    )
    intelligibility.add_argument(
        "--voice", action="append", required=True, help="voice name (repeat for several)"
    )
    intelligibility.add_argument("--json", action="store_true", help="print JSON instead")

    _add_prosody_parser(commands)
    add_soak_parser(commands)

    add_serve_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    try:
        registry = _registry(args)
        if args.command == "say":
            return _say(args, registry, sys.stdout)
        if args.command == "voices":
            return _voices(registry, sys.stdout)
        if args.command == "chunks":
            return _chunks(args, sys.stdin, sys.stdout)
        if args.command == "normalize":
            for line in normalize_lines(sys.stdin, _normalizer(args)):
                sys.stdout.write(line + "\n")
            return 0
        if args.command == "bench-engine":
            return _bench_engine(args, registry, sys.stdout)
        if args.command == "bench":
            return _bench_server(args, sys.stdout)
        if args.command == "bench-intelligibility":
            return _bench_intelligibility(args, registry, sys.stdout)
        if args.command == "bench-cache":
            return _bench_cache(args, sys.stdout)
        if args.command == "bench-encoders":
            results = run_encoder_bench(repeats=args.repeats)
            sys.stdout.write(format_encoder_table(results) + "\n")
            return 0
        if args.command == "bench-prosody":
            return _bench_prosody(args, sys.stdout)
        if args.command == "soak":
            return soak_command(args, sys.stdout)
        return serve(args)
    except (ValueError, FileNotFoundError, VoiceNotFoundError, VoxflowConnectionError) as error:
        print(f"voxflow: error: {error}", file=sys.stderr)  # noqa: T201 - CLI output
        return 2


def _registry(args: argparse.Namespace) -> VoiceRegistry:
    """The voices the one-shot commands may use: Piper's, and Kokoro's where ``make
    kokoro-voices`` installed them (the server offers those only with ``--kokoro``)."""
    kokoro_dir = default_voices_dir()
    has_kokoro = kokoro_model.available() and bool(find_packs(kokoro_dir))
    return VoiceRegistry(args.voices_dir, kokoro_dir=kokoro_dir if has_kokoro else None)


def _say(args: argparse.Namespace, registry: VoiceRegistry, out: TextIO) -> int:
    text = sys.stdin.read() if args.text == "-" else args.text
    # As the server runs it: one intra-op thread per worker, both cores for a first window.
    engine = build_engine(registry)
    voice = registry.get(args.voice or registry.default_voice).name
    settings = VoiceSettings(speed=args.speed, seed=args.seed, speaker_id=args.speaker)
    engine.load(voice)  # model loading is set-up, not synthesis: keep it out of the timings
    config = SessionConfig(
        default_voice=voice, chunking=_chunking(args), normalizer=_normalizer(args)
    )
    options = StartOptions(settings=settings, normalization=NormalizationMode(args.normalization))
    with LocalSpeaker(engine, config, streamed=not args.no_stream) as speaker:
        result = speaker.say(text, options)
    if args.output == "-":
        write_wav(sys.stdout.buffer, result.sample_rate, [result.audio])
        sys.stdout.buffer.flush()
        out = sys.stderr
    else:
        write_wav(Path(args.output), result.sample_rate, [result.audio])
    if args.stats:
        print(json.dumps(result.stats.as_dict()), file=out)
    return 0


def _voices(registry: VoiceRegistry, out: TextIO) -> int:
    rows = [("NAME", "LANGUAGE", "RATE", "SOURCE")]
    rows += [(v.name, v.language, str(v.sample_rate), v.source) for v in registry.list()]
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    for row in rows:
        line = "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        print(line.rstrip(), file=out)
    return 0


def _chunks(args: argparse.Namespace, source: TextIO, out: TextIO) -> int:
    buffer = TextBuffer(_chunking(args))
    for segment in [*buffer.feed(source.read()), *buffer.flush()]:
        print(segment.text.replace("\n", " "), file=out)
    return 0


def _bench_engine(args: argparse.Namespace, registry: VoiceRegistry, out: TextIO) -> int:
    if args.repeats < 1:
        raise ValueError("--repeats must be at least 1")
    engine = build_engine(registry, threads=args.threads)
    voice = args.voice or registry.default_voice
    engine.load(voice)

    def progress(case: str) -> None:
        print(f"  running {case} ...", file=sys.stderr)  # noqa: T201 - CLI output

    results = run_engine_bench(engine, voice, repeats=args.repeats, progress=progress)
    goals = summary(results)
    print(format_table(results), file=out)
    print(json.dumps({k: round(v, 3) for k, v in goals.items()}), file=out)
    if args.json is not None:
        payload = {"cases": [r.as_dict() for r in results], "summary": goals}
        args.json.write_text(json.dumps(payload, indent=2) + "\n")
    return 0


def _bench_voice_engine(registry: VoiceRegistry, voice: str) -> Engine:
    """The engine that speaks ``voice``, loaded, as ``bench-engine`` builds it."""
    engine = build_engine(registry)
    engine.load(voice)
    return engine


def _bench_intelligibility(args: argparse.Namespace, registry: VoiceRegistry, out: TextIO) -> int:
    # Imported here: pocketsphinx is a dev dependency, which the other commands do not need.
    try:
        from voxflow.bench import intelligibility  # noqa: PLC0415
    except ImportError as error:
        raise ValueError(f"bench-intelligibility needs voxflow[dev] ({error})") from error

    transcriber = intelligibility.Transcriber()
    reports = []
    for voice in args.voice:
        engine = _bench_voice_engine(registry, voice)
        print(f"  running {voice} ...", file=sys.stderr)  # noqa: T201 - CLI output
        policy = SchedulerSettings().windows  # the windows the server cuts
        sentences = intelligibility.SENTENCES
        reports.append(intelligibility.compare(engine, voice, sentences, policy, transcriber))
    if args.json:
        print(json.dumps([report.as_dict() for report in reports], indent=2), file=out)
    else:
        print("\n\n".join(report.format() for report in reports), file=out)
    return 0


def _bench_server(args: argparse.Namespace, out: TextIO) -> int:
    replies = load_corpus(args.corpus)
    if args.replies is not None:
        if args.replies < 1:
            raise ValueError("--replies must be at least 1")
        replies = replies[: args.replies]
    options = BenchOptions(
        replies=replies,
        sections=tuple(part.strip() for part in args.sections.split(",") if part.strip()),
        repeats=args.repeats,
        concurrency=args.concurrency,
        rounds=args.rounds,
        capacity=args.capacity or (),
        token_rate=args.token_rate,
        output_format=args.format,
        voice=args.voice,
    )
    report = run_server_bench_sync(args.url, options, sys.stderr, peer=args.peer)
    print(format_report(report), file=out)
    if args.json is not None:
        args.json.write_text(json.dumps(report.as_dict(), indent=2) + "\n")
    if args.plot is not None:
        args.plot.write_text(ttfa_plot(report))
    return 0


def _bench_cache(args: argparse.Namespace, out: TextIO) -> int:
    # Imported here: the client stack is not needed by the other commands.
    from voxflow.bench.cache_bench import CacheBenchOptions, run_cache_bench  # noqa: PLC0415

    sections = tuple(part.strip() for part in args.sections.split(",") if part.strip())
    unknown = set(sections) - {"hits", "replay"}
    if unknown or args.repeats < 1:
        raise ValueError(f"--sections must be among hits, replay and --repeats >= 1 ({unknown})")
    options = CacheBenchOptions(args.url, args.replica, args.trace, args.repeats, sections)

    def progress(section: str) -> None:
        print(f"  running {section} ...", file=sys.stderr)  # noqa: T201 - CLI output

    report = asyncio.run(run_cache_bench(options, progress))
    print(report.render(), file=out)
    if args.json is not None:
        args.json.write_text(json.dumps(report.as_dict(), indent=2) + "\n")
    return 0


def _bench_prosody(args: argparse.Namespace, out: TextIO) -> int:
    # The server stack is imported only when needed (see _serve).
    from voxflow.bench.levels import LevelSettings  # noqa: PLC0415
    from voxflow.bench.prosody import (  # noqa: PLC0415
        NoiseMode,
        ProsodyOptions,
        run_prosody_bench,
    )
    from voxflow.bench.prosody_report import format_report, report_dict  # noqa: PLC0415
    from voxflow.session.services import Services  # noqa: PLC0415

    replies = load_corpus(args.corpus)
    if args.replies is not None:
        if args.replies < 1:
            raise ValueError("--replies must be at least 1")
        replies = replies[: args.replies]
    options = ProsodyOptions(
        voice=args.voice,
        noise=NoiseMode(args.noise),
        seed=args.seed,
        tokens=args.tokens,
        token_rate=args.token_rate,
        levels=LevelSettings(silence_db=args.silence_db),
    )
    settings = ServerSettings.from_env(
        os.environ, voices_dir=args.voices_dir, default_voice=args.voice, workers=args.workers
    )
    services = Services.build(settings)
    try:
        report = run_prosody_bench(services, replies, options, sys.stderr)
    finally:
        services.shutdown()
    print(format_report(report), file=out)
    if args.json is not None:
        args.json.write_text(json.dumps(report_dict(report), indent=2) + "\n")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
