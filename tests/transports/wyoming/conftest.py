"""The Wyoming tests' services: the real voice and workers, built once for the package."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from voxflow.config import ServerSettings
from voxflow.engines.router import EngineRouter
from voxflow.server.services import Services


@pytest.fixture(scope="package")
def services(served_engine: EngineRouter) -> Iterator[Services]:
    built = Services.build(ServerSettings(workers=2), engine=served_engine)
    yield built
    built.shutdown()
