"""deploy/Dockerfile and .dockerignore: hadolint finds nothing, and the image is what the
deployment files expect (port, health check, user, the files the build needs)."""

from __future__ import annotations

import fnmatch
import json
import re
import subprocess
import tomllib
from pathlib import Path

from tests.support.manifests import DEPLOY, PORT, REPO, venv_tool

DOCKERFILE = DEPLOY / "Dockerfile"


def _hadolint(path: Path) -> list[dict[str, object]]:
    result = subprocess.run(
        [str(venv_tool("hadolint")), "--no-color", "--format", "json", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    findings = json.loads(result.stdout or "[]")
    assert isinstance(findings, list)
    assert result.returncode == (1 if findings else 0), result.stderr
    return findings


def _instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments), continuation lines joined, comments dropped."""
    text = re.sub(r"\\\n\s*", " ", DOCKERFILE.read_text())
    lines = [line.strip() for line in text.splitlines()]
    return [
        (line.split(None, 1)[0].upper(), line.split(None, 1)[1])
        for line in lines
        if line and not line.startswith("#")
    ]


def test_hadolint_finds_nothing_in_the_dockerfile() -> None:
    assert _hadolint(DOCKERFILE) == []


def test_hadolint_runs_and_reports(tmp_path: Path) -> None:
    """The linter of the test above does lint (offline, from the wheel's binary)."""
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM python:latest\nRUN cd /tmp && pip install voxflow\n")
    codes = {finding["code"] for finding in _hadolint(bad)}
    assert {"DL3007", "DL3003", "DL3013"} <= codes, codes


def test_the_image_serves_on_its_port_as_a_user_with_a_health_check() -> None:
    instructions = _instructions()
    final = instructions[max(i for i, (op, _) in enumerate(instructions) if op == "FROM") :]
    ops = dict(final)
    assert ops["EXPOSE"] == str(PORT)
    assert f"VOXFLOW_PORT={PORT}" in ops["ENV"]
    assert ops["USER"].split(":")[0] not in ("0", "root")
    assert ops["STOPSIGNAL"] == "SIGTERM"
    assert json.loads(ops["ENTRYPOINT"]) == ["voxflow"]
    assert json.loads(ops["CMD"]) == ["serve", "--host", "0.0.0.0"]
    health = ops["HEALTHCHECK"]
    assert "/healthz" in health and "VOXFLOW_PORT" in health and "--start-period" in health
    # The drain fits in the stop timeout the file documents.
    drain = float(re.search(r"VOXFLOW_DRAIN_S=(\d+)", ops["ENV"]).group(1))  # type: ignore[union-attr]
    stop_timeout = int(re.search(r"--stop-timeout (\d+)", DOCKERFILE.read_text()).group(1))  # type: ignore[union-attr]
    assert stop_timeout >= drain + 3


def _ignored(path: str, patterns: list[str]) -> bool:
    """Docker's rule: the last pattern that matches decides (``!`` re-includes)."""
    ignored = False
    for pattern in patterns:
        negated = pattern.startswith("!")
        bare = pattern.lstrip("!").rstrip("/")
        if fnmatch.fnmatch(path, bare) or path.startswith(bare + "/"):
            ignored = not negated
    return ignored


def test_the_build_context_holds_what_the_build_copies_and_the_package_needs() -> None:
    patterns = [
        line.strip()
        for line in (REPO / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    copied = [
        name
        for op, args in _instructions()
        if op == "COPY" and not args.startswith("--from")
        for name in args.split()[:-1]
    ]
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    needed = ["pyproject.toml", "src", project["readme"], *project.get("license-files", [])]
    for name in needed:
        assert name in copied, f"the Dockerfile does not copy {name}"
    for name in copied:
        assert (REPO / name).exists(), name
        assert not _ignored(name, patterns), f".dockerignore leaves out {name}"
    assert not _ignored("src/voxflow/cli/main.py", patterns)
    assert _ignored(".venv", patterns) and _ignored("tests", patterns)
