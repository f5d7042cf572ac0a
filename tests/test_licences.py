"""docs/licences.md against what voxflow really depends on: every runtime dependency of
pyproject.toml is listed, with the licence its installed distribution declares."""

from __future__ import annotations

import re
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
LICENCES = ROOT / "docs" / "licences.md"
# A table row: | `name` | version | licence declared | ... |
_ROW = re.compile(r"^\| `([^`]+)` \| ([^|]+) \| ([^|]+) \|", re.MULTILINE)


def _listed() -> dict[str, str]:
    """Each distribution the page lists, with the licence it says it declares."""
    rows = _ROW.findall(LICENCES.read_text(encoding="utf-8"))
    return {canonicalize_name(name): licence.strip() for name, _, licence in rows}


def _runtime_dependencies() -> list[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return [canonicalize_name(Requirement(spec).name) for spec in project["dependencies"]]


def _declared(distribution: metadata.Distribution) -> str:
    meta = distribution.metadata
    return str(meta.get("License-Expression") or meta.get("License") or "").strip()


def test_every_runtime_dependency_is_listed() -> None:
    listed = _listed()
    dependencies = _runtime_dependencies()
    assert dependencies, "no dependencies read from pyproject.toml"
    missing = [name for name in dependencies if name not in listed]
    assert not missing, f"docs/licences.md does not list {missing}"


@pytest.mark.parametrize("name", sorted(_listed()))
def test_the_listed_licence_is_the_one_the_distribution_declares(name: str) -> None:
    try:
        distribution = metadata.distribution(name)
    except metadata.PackageNotFoundError:
        # A dependency of a dependency that another version no longer pulls in; a direct one
        # is always installed, so the test above covers those.
        if name in _runtime_dependencies():
            raise
        pytest.skip(f"{name} is not installed here")
    assert _listed()[name] == _declared(distribution), (
        f"{name} {distribution.version} declares {_declared(distribution)!r}: "
        "update docs/licences.md (and check the licence is still compatible with GPLv3)"
    )


def test_the_licence_file_pyproject_and_readme_agree() -> None:
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert "GNU GENERAL PUBLIC LICENSE" in text.splitlines()[0]
    assert "Version 3, 29 June 2007" in text
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["license"] == "GPL-3.0-or-later"
    assert project["license-files"] == ["LICENSE"]
    assert "GPL-3.0-or-later" in (ROOT / "README.md").read_text(encoding="utf-8")
