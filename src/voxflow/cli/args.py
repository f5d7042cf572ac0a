"""What the one-shot commands' parsers share: the text options (chunking, normalization) of
``say`` and ``chunks``."""

from __future__ import annotations

import argparse
from pathlib import Path

from voxflow.cli.plugins import comma_ints
from voxflow.text.chunking import ChunkingConfig, Strategy
from voxflow.text.language import TextLanguage
from voxflow.text.lexicon_file import read_lexicon_file
from voxflow.text.normalize.normalizer import NormalizationMode, Normalizer

__all__ = [
    "add_chunking_options",
    "add_language_option",
    "add_normalization_options",
    "chunking",
    "normalizer",
    "text_language",
]


def add_chunking_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--chunking",
        choices=[s.value for s in Strategy],
        default=Strategy.ADAPTIVE.value,
        help="segmentation strategy (default: adaptive)",
    )
    parser.add_argument(
        "--schedule", type=comma_ints, help="chunk length schedule, e.g. 50,120,200"
    )
    parser.add_argument("--auto", action="store_true", help="auto mode: emit at every sentence")
    parser.add_argument("--max-chars", type=int, help="hard cap on a segment's length")


def add_normalization_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--normalization",
        choices=[m.value for m in NormalizationMode],
        default=NormalizationMode.AUTO.value,
        help="text normalization (numbers, dates, units ...; default auto = on)",
    )
    parser.add_argument("--lexicon", type=Path, help="pronunciation lexicon file")


def add_language_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--language",
        choices=[language.value for language in TextLanguage],
        default=TextLanguage.ENGLISH.value,
        help="the text's language, as a voice of it reads it (default: en)",
    )


def text_language(args: argparse.Namespace) -> TextLanguage:
    """``--language`` where the command has it; English otherwise (a voice's own decides)."""
    return TextLanguage(getattr(args, "language", TextLanguage.ENGLISH.value))


def normalizer(args: argparse.Namespace) -> Normalizer:
    lexicon = None if args.lexicon is None else read_lexicon_file(args.lexicon)
    return Normalizer(lexicon, language=text_language(args))


def chunking(args: argparse.Namespace) -> ChunkingConfig:
    options: dict[str, object] = {
        "strategy": Strategy(args.chunking),
        "chunk_length_schedule": args.schedule,
        "auto_mode": args.auto,
    }
    if args.max_chars is not None:
        options["max_chars"] = args.max_chars
    return ChunkingConfig(**options)  # type: ignore[arg-type]
