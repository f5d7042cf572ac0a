"""Malformed client JSON frames, each with the session error code its decoding must give; the
JSON decoding's tests and every JSON protocol's tests feed them."""

from __future__ import annotations

__all__ = ["BAD_FRAMES"]

BAD_FRAMES: dict[str, tuple[str | bytes, str]] = {
    "not json": ("{nope", "invalid_json"),
    "deep nesting": ("[" * 100_000 + "]" * 100_000, "invalid_json"),
    "deep object": ('{"a":' * 50_000 + "1" + "}" * 50_000, "invalid_json"),
    "huge integer": ('{"type": "text", "n": ' + "9" * 5000 + "}", "invalid_json"),
    "lone surrogate": ('{"type": "text", "text": "a\\ud800b"}', "invalid_message"),
    "lone low surrogate in a key": ('{"\\udc00": 1}', "invalid_message"),
    "array": ("[1, 2]", "invalid_message"),
    "string": ('"text"', "invalid_message"),
    "bytes not utf-8": (b"\xff\xfe{}", "invalid_json"),
    # Python's json.loads takes these by default; JSON has no such numbers.
    "NaN": ('{"type": "start", "speed": NaN}', "invalid_json"),
    "Infinity": ('{"type": "start", "speed": Infinity}', "invalid_json"),
    "-Infinity": ('{"type": "cancel", "played_ms": -Infinity}', "invalid_json"),
    "a number too large for a float": ('{"type": "start", "speed": 1e400}', "invalid_json"),
    "NaN deep inside": ('{"a": [{"b": [NaN]}]}', "invalid_json"),
}
