"""``voxflow soak``'s command line: its flags (every count and duration of ``SoakOptions``) and
the run, whose report is the command's output."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path
from typing import TextIO

from voxflow_bench.corpus import load_corpus
from voxflow_bench.soak.options import PROTOCOLS, SOAK_SECTIONS, SoakOptions
from voxflow_bench.soak.report import format_soak_report
from voxflow_bench.soak.run import run_soak_sync

__all__ = ["add_soak_parser", "soak_command"]

# (flag, SoakOptions field, type, help); the default shown is the field's.
_FLAGS: tuple[tuple[str, str, type, str], ...] = (
    ("--unloaded-runs", "unloaded_runs", int, "load: requests one at a time for the baseline"),
    ("--load-s", "load_s", float, "load: seconds of twice the cap"),
    ("--load-factor", "load_factor", float, "load: clients offered per admitted stream"),
    ("--stagger-s", "stagger_s", float, "looping clients start spread over this"),
    ("--rounds", "capacity_rounds", int, "capacity: rounds per level (median)"),
    ("--round-s", "capacity_round_s", float, "capacity: seconds per round"),
    ("--ttfa-ratio", "ttfa_ratio_goal", float, "capacity: TTFA p95 / unloaded p95 allowed"),
    ("--fault-streams", "fault_streams", int, "faults: looping streams meanwhile"),
    ("--baseline-s", "baseline_s", float, "faults: seconds of the light load alone first"),
    ("--idle", "idle_sockets", int, "faults: silent sockets"),
    ("--idle-s", "idle_hold_s", float, "faults: how long they are held"),
    ("--trickle", "trickle_sockets", int, "faults: sockets sending a byte a second"),
    ("--trickle-s", "trickle_s", float, "faults: how long they trickle"),
    ("--vanishing", "vanishing_clients", int, "faults: clients reset mid-stream"),
    ("--vanish-batch", "vanish_batch", int, "faults: vanishing clients at once"),
    ("--slow-readers", "slow_readers", int, "faults: slow readers per protocol"),
    ("--slow-timeout", "slow_timeout_s", float, "faults: how long a slow reader waits"),
    ("--settle-s", "settle_s", float, "idle time before the figures after a fault or block"),
    ("--requests", "soak_requests", int, "soak: requests"),
    ("--concurrency", "soak_concurrency", int, "soak: requests at once (0: the server's cap)"),
    ("--block", "soak_block", int, "soak: requests between readings of the resident size"),
    ("--warmup", "soak_warmup", int, "soak: requests left out of the slope"),
    ("--text-chars", "soak_text_chars", int, "soak: length of its texts"),
    ("--timeout", "run_timeout_s", float, "one request taking longer is an error"),
)


def _levels(value: str) -> tuple[int, ...]:
    try:
        levels = tuple(int(part) for part in value.split(",") if part.strip())
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers: {value}") from error
    if not levels:
        raise argparse.ArgumentTypeError("expected at least one level")
    return levels


def _names(value: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in value.split(",") if part.strip())


def add_soak_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    defaults = SoakOptions()
    soak = commands.add_parser(
        "soak",
        help="reliability figures of a running server: load past the admission cap, capacity, "
        "faults (idle, trickling, vanishing, slow clients), a 10,000-request soak",
    )
    soak.add_argument("--url", default="http://127.0.0.1:8000", help="server (default %(default)s)")
    soak.add_argument(
        "--capacity-url",
        help="run the capacity section against this server instead (one started with a "
        "--max-streams above the top level; make soak does)",
    )
    soak.add_argument(
        "--sections", type=_names, default=SOAK_SECTIONS, help=f"of {','.join(SOAK_SECTIONS)}"
    )
    soak.add_argument(
        "--protocols",
        type=_names,
        default=defaults.protocols,
        help=f"the looping clients' mix, of {','.join(PROTOCOLS)} (default native,openai)",
    )
    soak.add_argument(
        "--levels",
        type=_levels,
        default=defaults.capacity_levels,
        help="capacity: stream counts, stepped up until one fails",
    )
    soak.add_argument("--wyoming", help="faults: the server's Wyoming URI, e.g. tcp://host:port")
    soak.add_argument("--pid", type=int, help="the server's pid (threads, if /metrics has none)")
    soak.add_argument("--corpus", type=Path, help="replies file (default: the bundled corpus)")
    soak.add_argument("--wait-ready", type=float, default=0.0, help="wait this long for /readyz")
    soak.add_argument("--json", type=Path, help="also write the report as JSON here")
    for flag, dest, kind, text in _FLAGS:
        default = getattr(defaults, dest)
        soak.add_argument(flag, type=kind, dest=dest, default=default, help=f"{text} ({default})")


def soak_command(args: argparse.Namespace, out: TextIO) -> int:
    # Progress goes to stderr as log lines; the report is the command's output.
    logging.getLogger("voxflow_bench").setLevel(logging.DEBUG if args.verbose else logging.INFO)
    options = SoakOptions(
        replies=load_corpus(args.corpus),
        sections=args.sections,
        protocols=args.protocols,
        capacity_levels=args.levels,
        wyoming=args.wyoming,
        pid=args.pid,
        **{dest: getattr(args, dest) for _, dest, _, _ in _FLAGS},
    )
    report = run_soak_sync(args.url, options, args.capacity_url, args.wait_ready)
    out.write(format_soak_report(report))
    if args.json is not None:
        args.json.write_text(json.dumps(report.as_dict(), indent=2) + "\n")
    sys.stderr.flush()
    return 0
