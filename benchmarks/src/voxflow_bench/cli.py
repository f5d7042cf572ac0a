"""The benchmarks' commands: ``voxflow-bench COMMAND``, and the same commands inside ``voxflow``
(``voxflow bench ...``) through the ``voxflow.commands`` entry point (``voxflow.cli.plugins``)."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from voxflow import VoxflowConnectionError
from voxflow.cli.plugins import Subparsers
from voxflow_bench.command import BENCH_COMMANDS, add_bench_parsers, bench_command
from voxflow_bench.soak.command import add_soak_parser, soak_command

__all__ = ["add_commands", "main"]


def add_commands(commands: Subparsers[argparse.ArgumentParser]) -> None:
    """Add ``bench``, ``bench-*`` and ``soak`` to a command line's subparsers."""
    add_bench_parsers(commands)
    add_soak_parser(commands)
    for name in BENCH_COMMANDS:
        commands.choices[name].set_defaults(run=bench_command)
    commands.choices["soak"].set_defaults(run=soak_command)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="voxflow-bench", description="voxflow's benchmarks and soak (docs/benchmarks.md)"
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log at debug level")
    parser.add_argument("--voices-dir", type=Path, help="directory of extra Piper voices")
    add_commands(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    try:
        return int(args.run(args, sys.stdout))
    except (ValueError, FileNotFoundError, VoxflowConnectionError) as error:
        print(f"voxflow-bench: error: {error}", file=sys.stderr)  # noqa: T201 - CLI output
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
