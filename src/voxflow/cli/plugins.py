"""Commands that other distributions add to the ``voxflow`` command line.

A distribution lists, in the entry point group ``voxflow.commands``, a function that takes the
command line's subparsers and adds its commands' parsers, each with ``set_defaults(run=...)``:
what runs that command, given the parsed arguments and where to write. The argument types the
``voxflow`` command line uses (``comma_ints``) serve its plugins' parsers too. The benchmarks
(``benchmarks/``, the ``voxflow-bench`` distribution) add ``bench``, ``bench-*`` and ``soak``
this way; without them installed, those commands are not offered.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import TextIO

__all__ = [
    "COMMANDS_GROUP",
    "AddCommands",
    "CommandRun",
    "Subparsers",
    "add_plugin_commands",
    "comma_ints",
]

COMMANDS_GROUP = "voxflow.commands"

Subparsers = argparse._SubParsersAction
CommandRun = Callable[[argparse.Namespace, TextIO], int]
AddCommands = Callable[["Subparsers[argparse.ArgumentParser]"], None]


def add_plugin_commands(commands: Subparsers[argparse.ArgumentParser]) -> None:
    """Let every installed ``voxflow.commands`` entry point add its commands to ``commands``."""
    for entry in sorted(entry_points(group=COMMANDS_GROUP), key=lambda entry: entry.name):
        add: AddCommands = entry.load()
        add(commands)


def comma_ints(value: str) -> tuple[int, ...]:
    """An argparse type: ``"50,120,200"`` is ``(50, 120, 200)``."""
    try:
        entries = tuple(int(part) for part in value.split(",") if part.strip())
    except ValueError as error:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated integers, e.g. 1,4,8: {value}"
        ) from error
    if not entries:
        raise argparse.ArgumentTypeError("expected at least one integer")
    return entries
