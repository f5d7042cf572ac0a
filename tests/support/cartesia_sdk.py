"""The official ``cartesia`` SDK's WebSocket, pointed at a test server as a user would."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from cartesia import Cartesia
from cartesia.lib._tts import TTSResourceConnection

__all__ = ["S16_24K", "VOICE", "sdk_connection"]

VOICE = {"mode": "id", "id": "a0e99841-438c-4a64-b679-ae501e7d6091"}  # maps to the default voice
S16_24K = {"container": "raw", "encoding": "pcm_s16le", "sample_rate": 24000}


@contextlib.contextmanager
def sdk_connection(server_url: str) -> Iterator[TTSResourceConnection]:
    with (
        Cartesia(
            api_key="sk_test",
            base_url=server_url,
            websocket_base_url=server_url.replace("http://", "ws://"),
        ) as client,
        # cartesia 4.2 calls websockets' connect() without a with-block, which websockets 17.1+
        # warns about unless asked for its legacy (same) behaviour.
        client.tts.websocket_connect(
            websocket_connection_options={"legacy": True}  # type: ignore[typeddict-unknown-key]
        ) as connection,
    ):
        yield connection
