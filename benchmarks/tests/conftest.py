"""The shared fixtures (``tests.support.fixtures``): the real voices and engines, a real server."""

from tests.support.fixtures import *  # noqa: F403 - pytest finds fixtures by name in a conftest
