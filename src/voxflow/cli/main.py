"""The ``voxflow`` command line: say, voices, normalize, chunks, serve, and the commands that
installed distributions add (``voxflow.cli.plugins``: the benchmarks' ``bench`` and ``soak``)."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TextIO

from voxflow.audio.pcm import write_wav
from voxflow.cli.args import (
    add_chunking_options,
    add_language_option,
    add_normalization_options,
    chunking,
    normalizer,
    text_language,
)
from voxflow.cli.plugins import CommandRun, add_plugin_commands
from voxflow.cli.serve import add_serve_parser, serve
from voxflow.client import VoxflowConnectionError
from voxflow.connection.speaker import LocalSpeaker
from voxflow.engines.base import VoiceNotFoundError, VoiceSettings
from voxflow.engines.registry import VoiceRegistry, installed_voices
from voxflow.engines.router import build_engine
from voxflow.engines.split_cache import SplitCache
from voxflow.session.options import SessionConfig, StartOptions
from voxflow.text.buffer import TextBuffer
from voxflow.text.normalize.normalizer import NormalizationMode, normalize_lines
from voxflow.version import __version__

log = logging.getLogger("voxflow")


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
    add_normalization_options(say_cmd)
    add_chunking_options(say_cmd)

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
    add_language_option(normalize_cmd)

    chunks_cmd = commands.add_parser("chunks", help="print the segments of text read from stdin")
    add_chunking_options(chunks_cmd)
    add_language_option(chunks_cmd)

    add_plugin_commands(commands)

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
        registry = installed_voices(args.voices_dir)
        if args.command == "say":
            return _say(args, registry, sys.stdout)
        if args.command == "voices":
            return _voices(registry, sys.stdout)
        if args.command == "chunks":
            return _chunks(args, sys.stdin, sys.stdout)
        if args.command == "normalize":
            for line in normalize_lines(sys.stdin, normalizer(args)):
                sys.stdout.write(line + "\n")
            return 0
        run: CommandRun | None = getattr(args, "run", None)
        if run is not None:
            return run(args, sys.stdout)
        return serve(args)
    except (ValueError, FileNotFoundError, VoiceNotFoundError, VoxflowConnectionError) as error:
        print(f"voxflow: error: {error}", file=sys.stderr)  # noqa: T201 - CLI output
        return 2


def _say(args: argparse.Namespace, registry: VoiceRegistry, out: TextIO) -> int:
    text = sys.stdin.read() if args.text == "-" else args.text
    # As the server runs it: one intra-op thread per worker, both cores for a first window.
    engine = build_engine(registry, split_cache=SplitCache.from_env(os.environ))
    voice = registry.get(args.voice or registry.default_voice).name
    settings = VoiceSettings(speed=args.speed, seed=args.seed, speaker_id=args.speaker)
    engine.load(voice)  # model loading is set-up, not synthesis: keep it out of the timings
    config = SessionConfig(
        default_voice=voice, chunking=chunking(args), normalizer=normalizer(args)
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
    buffer = TextBuffer(chunking(args), language=text_language(args))
    for segment in [*buffer.feed(source.read()), *buffer.flush()]:
        print(segment.text.replace("\n", " "), file=out)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
