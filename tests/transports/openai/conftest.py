"""The official OpenAI SDK against the session's server."""

from collections.abc import Iterator

import openai
import pytest


@pytest.fixture
def client(server_url: str) -> Iterator[openai.OpenAI]:
    # Closed at the end of each test: an SDK client left to the garbage collector leaks its
    # connection pool's sockets (a ResourceWarning, an error under -W error, in a later test).
    with openai.OpenAI(base_url=server_url + "/v1", api_key="not-needed", max_retries=0) as c:
        yield c
