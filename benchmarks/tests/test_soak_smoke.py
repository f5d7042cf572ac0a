"""``voxflow soak`` against a real server, every section in a tiny configuration: the tool runs
end to end and its figures have the right shape (what they are is docs/reliability.md's)."""

from __future__ import annotations

import asyncio
import io

import pytest
from tests.support.servers import free_port, running_server

from voxflow import ServerSettings
from voxflow.cli.main import main
from voxflow.engines.router import EngineRouter
from voxflow_bench.corpus import load_corpus
from voxflow_bench.soak.options import SoakOptions
from voxflow_bench.soak.report import SoakReport, format_soak_report
from voxflow_bench.soak.run import SOAK_MIX, run_soak

CAP = 1


def _options(**changes: object) -> SoakOptions:
    replies = tuple(r for r in load_corpus() if r.name in ("reschedule", "lights", "ack-sure"))
    tiny: dict[str, object] = {
        "replies": replies,
        "unloaded_runs": 2,
        "load_s": 1.0,
        "load_factor": 3.0,
        "stagger_s": 0.0,
        "capacity_levels": (1,),
        "capacity_rounds": 1,
        "capacity_round_s": 0.5,
        "fault_streams": 1,
        "baseline_s": 0.3,
        "idle_sockets": 5,
        "idle_hold_s": 0.5,
        "trickle_sockets": 5,
        "trickle_s": 1.0,
        "vanishing_clients": 4,
        "vanish_batch": 2,
        "slow_readers": 1,
        "slow_timeout_s": 0.25,
        "settle_s": 0.1,
        "soak_requests": len(SOAK_MIX) * 2,
        "soak_block": len(SOAK_MIX),
        "soak_warmup": len(SOAK_MIX),
        "soak_concurrency": 1,  # under the cap of 1: the soak must see no refusal
        "backoff_s": 0.2,
    }
    tiny.update(changes)
    return SoakOptions(**tiny)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def report(served_engine: EngineRouter) -> SoakReport:
    wyoming = f"tcp://127.0.0.1:{free_port()}"
    settings = ServerSettings(
        port=free_port(), workers=3, max_streams=CAP, wyoming_uri=wyoming, write_timeout_s=1.0
    )
    with running_server(settings, served_engine) as url:
        return asyncio.run(run_soak(url, _options(wyoming=wyoming)))


def test_load_admits_up_to_the_cap_and_refuses_the_rest(report: SoakReport) -> None:
    load = report.load
    assert load is not None and (load.stream_limit, load.clients) == (CAP, 3 * CAP)
    assert load.unloaded.admitted == 2 and load.unloaded.error_count == 0
    # Three clients start together against a cap of one: the first is admitted, the others
    # refused while it speaks; nothing else happens to any of them.
    assert load.loaded.admitted >= 1 and load.loaded.refused >= 1
    assert load.loaded.error_count == 0
    assert load.ttfa_ratio is not None


def test_capacity_measures_each_level_in_rounds(report: SoakReport) -> None:
    capacity = report.capacity
    assert capacity is not None and capacity.workers == 3  # read from the server (--workers 3)
    assert [level.streams for level in capacity.levels] == [1]
    assert len(capacity.levels[0].rounds) == 1 and capacity.levels[0].rounds[0].total >= 1


def test_every_fault_ran_with_the_server_figures_around_it(report: SoakReport) -> None:
    names = [fault.name for fault in report.faults]
    assert names == ["baseline", "5 idle sockets", "5 trickling", "4 vanishing", "slow readers"]
    for fault in report.faults:
        assert fault.health_ms.count + fault.health_failures > 0
        assert fault.before.rss_mib > 0 and fault.after.threads is not None
    slow = report.faults[-1].detail
    for protocol in ("native", "elevenlabs-ws", "openai", "elevenlabs-http", "wyoming"):
        assert f"{protocol} " in slow


def test_the_soak_runs_every_kind_and_reads_the_server_between_blocks(report: SoakReport) -> None:
    soak = report.soak
    assert soak is not None and soak.outcomes.total == 2 * len(SOAK_MIX)
    assert [sample.requests for sample in soak.samples] == [0, len(SOAK_MIX), 2 * len(SOAK_MIX)]
    assert {kind for kind, _ in soak.by_kind} == set(SOAK_MIX)
    assert soak.outcomes.errors == ()
    assert soak.slope_mib_per_1000 is not None  # two readings at or after the warm-up
    text = format_soak_report(report)
    assert "1. Load" in text and "4. Soak" in text and "Goals" in text


def test_the_cli_prints_the_report(
    capsys: pytest.CaptureFixture[str], served_engine: EngineRouter
) -> None:
    settings = ServerSettings(port=free_port(), workers=2)
    with running_server(settings, served_engine) as url:
        flags = "--sections soak --requests 4 --block 2 --warmup 0 --concurrency 2 --settle-s 0"
        code = main(["soak", "--url", url, *flags.split()])
    out = capsys.readouterr().out
    assert code == 0
    assert "4. Soak: 4 mixed requests, 2 at once" in out and "RSS slope after the first 0" in out
    assert io.StringIO(out).readline().startswith("voxflow soak: http://127.0.0.1:")
