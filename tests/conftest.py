"""The shared fixtures (``tests.support.fixtures``): the real voices and engines, a real server;
and the order the files run in."""

import pytest

from tests.support.fixtures import *  # noqa: F403 - pytest finds fixtures by name in a conftest

# The directories whose files take seconds each (the benchmarks' tests, the end-to-end and the
# reliability tests), first. make unit runs xdist with --no-loadscope-reorder, which hands out
# whole files in collection order, so the run ends on short files rather than waiting on a long
# one (by default xdist orders files by their number of tests, which put the one-test files
# that take 20 s last).
LONG_FIRST = ("benchmarks/tests/", "tests/e2e/", "tests/reliability/")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        return next(
            (i for i, prefix in enumerate(LONG_FIRST) if item.nodeid.startswith(prefix)),
            len(LONG_FIRST),
        )

    items.sort(key=rank)  # stable: each file's tests stay together and in order
