"""The native protocol's ``pronunciation_dictionary_locators`` on ``start``: a server's
pronunciation dictionaries (made through ElevenLabs' API) speak a context's words, timed on the
written words, under the context's own ``lexicon``."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.sync.client import ClientConnection, connect

TEXT = "The UN met today."
RULES = {
    "name": "Acronyms",
    "rules": [{"type": "alias", "string_to_replace": "UN", "alias": "United Nations"}],
}


@pytest.fixture
def server(
    server_factory: Callable[..., contextlib.AbstractContextManager[str]], tmp_path: Path
) -> Iterator[str]:
    with server_factory(dictionaries_dir=tmp_path, workers=2) as url:
        yield url


def _dictionary(url: str) -> str:
    with httpx.Client(timeout=30) as http:
        answer = http.post(f"{url}/v1/pronunciation-dictionaries/add-from-rules", json=RULES)
    assert answer.status_code == 200, answer.text
    identity = answer.json()["id"]
    assert isinstance(identity, str)
    return identity


def _speak(ws: ClientConnection, context_id: str, **start: Any) -> list[dict[str, Any]]:
    ws.send(json.dumps({"type": "start", "context_id": context_id, "seed": 1, **start}))
    ws.send(json.dumps({"type": "text", "context_id": context_id, "text": TEXT}))
    ws.send(json.dumps({"type": "end", "context_id": context_id}))
    seen: list[dict[str, Any]] = []
    while not seen or seen[-1]["type"] not in ("done", "error"):
        event = json.loads(ws.recv(timeout=60))
        # A refused start leaves its text and end to be refused too: those are not this turn's.
        if event.get("context_id") == context_id and event.get("code") != "unknown_context":
            seen.append(event)
    return seen


def _un(events: list[dict[str, Any]]) -> tuple[str, float]:
    """The written word at "UN" and how long it is spoken."""
    words = [w for e in events if e["type"] == "timestamps" for w in e["words"]]
    (word,) = [w for w in words if w["char_start"] == TEXT.index("UN")]
    return TEXT[word["char_start"] : word["char_end"]], word["end_ms"] - word["start_ms"]


def test_a_contexts_dictionaries_speak_its_words_timed_on_the_written_text(server: str) -> None:
    identity = _dictionary(server)
    locators = [{"pronunciation_dictionary_id": identity}]
    with connect(server.replace("http://", "ws://") + "/v1/stream") as ws:
        plain = _un(_speak(ws, "plain"))
        spoken = _un(_speak(ws, "dictionary", pronunciation_dictionary_locators=locators))
        # The context's own lexicon wins over its dictionaries.
        own = _un(
            _speak(
                ws,
                "own",
                pronunciation_dictionary_locators=locators,
                lexicon=[{"word": "UN", "respelling": "un"}],
            )
        )
    assert plain[0] == spoken[0] == own[0] == "UN"
    assert spoken[1] > plain[1] + 300
    assert own[1] < spoken[1] - 300


def test_an_unknown_dictionary_is_an_error_of_the_context(server: str) -> None:
    with connect(server.replace("http://", "ws://") + "/v1/stream") as ws:
        locators = [{"pronunciation_dictionary_id": "nope"}]
        events = _speak(ws, "a", pronunciation_dictionary_locators=locators)
        assert (events[-1]["type"], events[-1]["code"]) == ("error", "unknown_dictionary")
        bad = _speak(ws, "b", pronunciation_dictionary_locators="nope")
        assert (bad[-1]["type"], bad[-1]["code"]) == ("error", "invalid_message")
        # The connection goes on.
        assert _speak(ws, "c")[-1]["type"] == "done"


def test_a_server_without_dictionaries_says_so(server_url: str) -> None:
    with connect(server_url.replace("http://", "ws://") + "/v1/stream") as ws:
        locators = [{"pronunciation_dictionary_id": "any"}]
        events = _speak(ws, "a", pronunciation_dictionary_locators=locators)
        assert (events[-1]["type"], events[-1]["code"]) == ("error", "dictionaries_disabled")
