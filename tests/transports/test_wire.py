"""Decoding client JSON frames: every malformed frame is a ``SessionError``, never a crash."""

from __future__ import annotations

import json

import pytest

from voxflow.session.session import SessionError
from voxflow.transports.wire import decode_object, dump

BAD_FRAMES = {
    "not json": ("{nope", "invalid_json"),
    "deep nesting": ("[" * 100_000 + "]" * 100_000, "invalid_json"),
    "deep object": ('{"a":' * 50_000 + "1" + "}" * 50_000, "invalid_json"),
    "huge integer": ('{"type": "text", "n": ' + "9" * 5000 + "}", "invalid_json"),
    "lone surrogate": ('{"type": "text", "text": "a\\ud800b"}', "invalid_message"),
    "lone low surrogate in a key": ('{"\\udc00": 1}', "invalid_message"),
    "array": ("[1, 2]", "invalid_message"),
    "string": ('"text"', "invalid_message"),
    "bytes not utf-8": (b"\xff\xfe{}", "invalid_json"),
}


@pytest.mark.parametrize("name", sorted(BAD_FRAMES))
def test_malformed_frames_raise_session_errors(name: str) -> None:
    raw, code = BAD_FRAMES[name]
    with pytest.raises(SessionError) as caught:
        decode_object(raw)
    assert caught.value.code == code
    # The message itself is safe to send back.
    dump({"message": caught.value.message}).encode("utf-8")


def test_valid_frames_decode_including_surrogate_pairs() -> None:
    assert decode_object('{"text": "smile \\ud83d\\ude00"}') == {"text": "smile \U0001f600"}
    assert decode_object(b'{"a": [1, {"b": null}]}') == {"a": [1, {"b": None}]}
    assert json.loads(dump({"t": "é"})) == {"t": "é"} and "é" in dump({"t": "é"})
