"""A sentence that ends the text sent so far is spoken without waiting for more text, on the
ElevenLabs WebSocket in auto mode, as an agent that sends one reply and no flush sees it."""

from __future__ import annotations

import base64
import json
from typing import Any

from websockets.sync.client import connect


def _url(server_url: str, query: str) -> str:
    base = server_url.replace("http://", "ws://")
    return f"{base}/v1/text-to-speech/joe/stream-input?{query}"


def _send(ws: Any, **message: Any) -> None:
    ws.send(json.dumps(message))


def test_a_finished_sentence_is_spoken_without_a_flush_in_auto_mode(server_url: str) -> None:
    with connect(_url(server_url, "output_format=pcm_16000&auto_mode=true"), max_size=None) as ws:
        _send(ws, text=" ")  # the context's init message
        _send(ws, text="How can I help?")
        # Nothing more is sent: the look-ahead (20 ms in auto mode) confirms the sentence end.
        audio = b""
        while not audio:
            reply = json.loads(ws.recv(timeout=10))
            assert "error" not in reply and "message" not in reply, reply
            if reply.get("audio"):
                audio = base64.b64decode(reply["audio"])
        assert len(audio) > 0
        _send(ws, text="")  # end of input: the socket closes cleanly


def test_an_abbreviation_at_the_end_is_not_taken_for_a_sentence_end(server_url: str) -> None:
    with connect(_url(server_url, "output_format=pcm_16000&auto_mode=true"), max_size=None) as ws:
        _send(ws, text=" ")
        _send(ws, text="Ask Dr.")  # too short to be cut early; "Dr." needs its name
        # "Dr." waits for the name: no audio comes, however long the wait.
        try:
            reply = json.loads(ws.recv(timeout=1.0))
        except TimeoutError:
            reply = None
        assert reply is None or not reply.get("audio"), reply
        _send(ws, text=" Patel.")
        _send(ws, text="")
        texts = []
        for raw in ws:
            reply = json.loads(raw)
            alignment = reply.get("alignment") or {}
            texts.append("".join(alignment.get("chars", [])))
            if reply.get("isFinal"):
                break
        assert "".join(texts).strip() == "Ask Dr. Patel."
