"""The reliability tests' fixtures: voxflow's error log, watched while generated inputs run."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from tests.support.fuzz_inputs import ErrorLog


@pytest.fixture(scope="module")
def error_log() -> Iterator[ErrorLog]:
    handler = ErrorLog()
    logger = logging.getLogger("voxflow")
    logger.addHandler(handler)
    yield handler
    logger.removeHandler(handler)
