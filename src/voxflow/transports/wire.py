"""JSON on the wire, shared by every protocol: decoding a client frame that may be anything, and
encoding a server frame.

A client frame can be malformed in ways ``json.loads`` does not report as a ``JSONDecodeError``:
nesting deep enough to exhaust the recursion limit raises ``RecursionError``, an integer of more
than 4,300 digits raises ``ValueError``, and ``"\\ud800"`` decodes to a lone surrogate that no
UTF-8 encoder accepts, so echoing it back (in an error, a word timing) would fail later, far from
its cause. ``decode_object`` turns all of them into a ``SessionError`` with a clear message, so
each protocol answers in its own error shape and the connection stays usable.
"""

from __future__ import annotations

import json
import re
from typing import Any

from voxflow.session.errors import SessionError

__all__ = ["decode_object", "dump"]

# A \uD800-\uDFFF escape: the only way a lone surrogate gets into a decoded JSON string (a text
# frame is valid UTF-8, which cannot hold one).
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def decode_object(raw: str | bytes) -> dict[str, Any]:
    """The JSON object in ``raw``; ``SessionError("invalid_json" | "invalid_message")`` if it is
    not one that the server can safely handle."""
    try:
        message = json.loads(raw)
    except RecursionError:
        raise SessionError("invalid_json", "message is nested too deeply") from None
    except UnicodeDecodeError:
        raise SessionError("invalid_json", "message is not UTF-8") from None
    except ValueError as error:  # JSONDecodeError, or an integer of more than 4,300 digits
        raise SessionError("invalid_json", f"message is not valid JSON: {error}") from None
    if not isinstance(message, dict):
        raise SessionError("invalid_message", "message must be a JSON object")
    text = raw if isinstance(raw, str) else raw.decode("utf-8", "replace")
    if _SURROGATE_ESCAPE.search(text) is not None:
        try:
            json.dumps(message, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise SessionError(
                "invalid_message", "message holds a lone UTF-16 surrogate (not a character)"
            ) from None
    return message


def dump(body: dict[str, Any]) -> str:
    """A compact JSON text frame (non-ASCII characters as themselves)."""
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False)
