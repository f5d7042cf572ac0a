"""The benchmarks reach voxflow the way a user does: its public API (``from voxflow import``),
its command-line plugin contract (``voxflow.cli.plugins``), HTTP and the client. What is left
of the way in is listed, one module at a time, and the list may only shrink."""

from __future__ import annotations

from pathlib import Path

from tests.support.source_imports import imported_modules

import voxflow_bench

BENCH = Path(voxflow_bench.__file__).parent
PUBLIC = {"voxflow", "voxflow.cli.plugins"}

# The offline benches that still render below the public API, with what each imports: the
# component benches (encoders, markup's text stages) time a stage alone, and the prosody bench
# drives a session piece by piece (it tells which engine request each word timing came from,
# which no client sees). Each goes when its bench can be written against LocalSpeaker or a
# server.
INTERNAL: dict[str, set[str]] = {
    "command": {"voxflow.cli.args", "voxflow.server.services"},
    "encoders": {"voxflow.audio.encoders", "voxflow.audio.formats", "voxflow.audio.resample"},
    "markup": {"voxflow.text.lexicon", "voxflow.text.normalize.normalizer"},
    "prosody.render": {
        "voxflow.audio.seam_settings",
        "voxflow.audio.seams",
        "voxflow.connection.local",
        "voxflow.engines.base",
        "voxflow.runtime.jobs",
        "voxflow.server.services",
        "voxflow.session.context",
        "voxflow.session.events",
        "voxflow.session.pieces",
        "voxflow.session.session",
        "voxflow.session.timings",
        "voxflow.text.chunking",
        "voxflow.text.normalize.normalizer",
    },
    "prosody.results": {"voxflow.session.events"},
    "prosody.run": {"voxflow.server.services", "voxflow.session.events"},
    "results": {"voxflow.text.segment"},
}


def _voxflow_imports(path: Path) -> set[str]:
    return {name for name in imported_modules(path) if name.split(".")[0] == "voxflow"}


def test_the_benchmarks_use_the_public_api_but_for_the_listed_internals() -> None:
    internal: dict[str, set[str]] = {}
    for path in sorted(BENCH.rglob("*.py")):
        module = ".".join(path.relative_to(BENCH).with_suffix("").parts)
        below = _voxflow_imports(path) - PUBLIC
        if below:
            internal[module] = below
    assert internal == INTERNAL


def test_the_finder_sees_imports_inside_functions(tmp_path: Path) -> None:
    module = tmp_path / "late.py"
    module.write_text("def run():\n    from voxflow.server.services import Services\n")
    assert _voxflow_imports(module) == {"voxflow.server.services"}
