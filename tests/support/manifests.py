"""The deployment files under deploy/, loaded for the tests."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
KUBERNETES = DEPLOY / "kubernetes"
# What `voxflow serve` listens on in the image (deploy/Dockerfile's EXPOSE and VOXFLOW_PORT).
PORT = 8000


def venv_tool(name: str) -> Path:
    """A command installed by the dev dependencies, beside this interpreter."""
    return Path(sys.executable).parent / name


def load_all(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


def load(path: Path) -> dict[str, Any]:
    (doc,) = load_all(path)
    assert isinstance(doc, dict)
    return doc
