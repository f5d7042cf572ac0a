"""The benchmarks reach voxflow the way a user does: its public API (``from voxflow import``),
its command-line plugin contract (``voxflow.cli.plugins``), HTTP and the client; never a module
below them."""

from __future__ import annotations

from pathlib import Path

from tests.support.source_imports import imported_modules

import voxflow_bench

BENCH = Path(voxflow_bench.__file__).parent
PUBLIC = {"voxflow", "voxflow.cli.plugins"}


def _voxflow_imports(path: Path) -> set[str]:
    return {name for name in imported_modules(path) if name.split(".")[0] == "voxflow"}


def test_the_benchmarks_use_only_the_public_api() -> None:
    internal: dict[str, set[str]] = {}
    for path in sorted(BENCH.rglob("*.py")):
        module = ".".join(path.relative_to(BENCH).with_suffix("").parts)
        below = _voxflow_imports(path) - PUBLIC
        if below:
            internal[module] = below
    assert internal == {}


def test_the_finder_sees_imports_inside_functions(tmp_path: Path) -> None:
    module = tmp_path / "late.py"
    module.write_text("def run():\n    from voxflow.server.services import Services\n")
    assert _voxflow_imports(module) == {"voxflow.server.services"}
