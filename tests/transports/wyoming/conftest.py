"""The Wyoming tests' services: the real voice and workers, built once for the package."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from voxflow.config import ServerSettings
from voxflow.server.services import Services


@pytest.fixture(scope="package")
def services() -> Iterator[Services]:
    built = Services.build(ServerSettings(workers=2))
    yield built
    built.shutdown()
