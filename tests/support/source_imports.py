"""What a Python source file imports, read from the source as written (not by running it)."""

from __future__ import annotations

import ast
from pathlib import Path

__all__ = ["imported_modules"]


def imported_modules(path: Path) -> set[str]:
    """The modules ``path`` imports from, wherever the import stands in it (inside functions
    and ``if TYPE_CHECKING:`` blocks too); relative imports are left out."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found
