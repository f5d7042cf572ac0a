"""voxflow's modules import one way: no cycle among them, not even through imports made only for
type checking (``if TYPE_CHECKING:``), read from the source as written."""

from __future__ import annotations

import ast
from pathlib import Path

import voxflow
from tests.support.source_imports import imported_modules

SOURCE = Path(voxflow.__file__).parent.parent  # src/


def _module_name(path: Path) -> str:
    parts = path.relative_to(SOURCE).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(path): path for path in (SOURCE / "voxflow").rglob("*.py")}


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Each module's imports of other modules of ``modules``, wherever they stand in it."""
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    target = f"{node.module}.{alias.name}"
                    if target in modules:
                        graph[name].add(target)
                    elif node.module in modules:
                        graph[name].add(node.module)
            elif isinstance(node, ast.Import):
                graph[name].update(alias.name for alias in node.names if alias.name in modules)
        graph[name].discard(name)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_cycle_finder_finds_a_cycle_through_type_checking_imports(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "a.py").write_text("from pkg.b import thing\n")
    (package / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import c\n"
    )
    (package / "c.py").write_text("import pkg.a\n")
    (package / "d.py").write_text("from pkg.a import x\n")
    modules = {f"pkg.{path.stem}": path for path in package.glob("*.py")}
    assert cycles(import_graph(modules)) == [["pkg.a", "pkg.b", "pkg.c"]]


def test_no_module_of_voxflow_imports_itself_back() -> None:
    modules = _modules()
    assert "voxflow.session.session" in modules and "voxflow.runtime.work" in modules
    assert cycles(import_graph(modules)) == []


# The layers, top to bottom (docs/architecture.md): a module imports its own layer and those below.
LAYERS = {
    "cli": 7,
    "server": 6,
    "transports": 5,
    "connection": 4,
    "session": 3,
    "runtime": 2,
    "engines": 1,
    "text": 1,
    "audio": 1,
}
# Settings the composition root reads; the client; the version string; the native protocol's
# schema, which the server writes by and the client reads by (stdlib only, below every layer).
OUTSIDE_LAYERS = {
    "voxflow.config": 6,
    "voxflow.client": 0,
    "voxflow.version": 0,
    "voxflow.transports.native.schema": 0,
}


def _layer(module: str) -> int | None:
    if module in OUTSIDE_LAYERS:
        return OUTSIDE_LAYERS[module]
    parts = module.split(".")
    if len(parts) > 1 and parts[1] in LAYERS:
        return LAYERS[parts[1]]
    for prefix, rank in OUTSIDE_LAYERS.items():
        if module == prefix or module.startswith(prefix + "."):
            return rank
    return None


def test_every_layer_imports_only_its_own_and_those_below() -> None:
    graph = import_graph(_modules())
    upward = []
    for module, imports in graph.items():
        rank = _layer(module)
        if rank is None:  # the package's public API and ``python -m voxflow``
            continue
        upward += [(module, other) for other in imports if (_layer(other) or 0) > rank]
    assert upward == []


def test_nothing_of_the_product_or_its_tests_imports_the_benchmarks() -> None:
    tests = Path(__file__).parent
    files = [*(SOURCE / "voxflow").rglob("*.py"), *tests.rglob("*.py")]
    assert len(files) > 300
    benchmark_imports = [
        (str(path), module)
        for path in files
        for module in imported_modules(path)
        if module.split(".")[0] == "voxflow_bench"
    ]
    assert benchmark_imports == []


def test_test_modules_share_code_only_through_the_support_package() -> None:
    tests = Path(__file__).parent
    shared = [
        (str(path.relative_to(tests)), module)
        for path in tests.rglob("*.py")
        for module in imported_modules(path)
        if module.split(".")[0] == "tests" and not module.startswith("tests.support")
    ]
    assert shared == []


def test_every_name_a_module_exports_is_its_own() -> None:
    # A module whose __all__ lists names it imports is a re-export shim for old importers. Only
    # packages (their __init__) gather names: the public API and the client's.
    reexported = []
    for name, path in _modules().items():
        if path.name == "__init__.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported = {
            alias.asname or alias.name
            for node in tree.body
            if isinstance(node, ast.ImportFrom)
            for alias in node.names
        }
        for node in tree.body:
            if isinstance(node, ast.Assign) and any(
                isinstance(target, ast.Name) and target.id == "__all__" for target in node.targets
            ):
                listed = ast.literal_eval(node.value)
                reexported += [(name, export) for export in listed if export in imported]
    assert reexported == []
