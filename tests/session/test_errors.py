"""The one error model: every code the server raises is in the catalogue, with its defaults."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import voxflow
from voxflow.engines.registry import VoiceRegistry
from voxflow.session import session as session_module
from voxflow.session.errors import CODES, SessionError, is_retryable, is_server_fault
from voxflow.session.events import ErrorOut
from voxflow.session.options import SessionConfig, StartOptions
from voxflow.session.session import Session

SRC = Path(voxflow.__file__).parent

# Where a code is written down in the source: raised, output as an event, reported by a protocol,
# or fixed by a subclass of SessionError.
_RAISED = re.compile(r'SessionError\(\s*"([a-z_]+)"')
_OUTPUT = re.compile(r'ErrorOut\(\s*[^,()]+,\s*"([a-z_]+)"')
_REPORTED = re.compile(r'\.error\(\s*[^,()]+,\s*"([a-z_]+)"')
_SUBCLASS = re.compile(r'\(SessionError\):.*?super\(\).__init__\(\s*"([a-z_]+)"', re.DOTALL)


def _codes_in_source() -> dict[str, str]:
    found: dict[str, str] = {}
    for path in sorted(SRC.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        for pattern in (_RAISED, _OUTPUT, _REPORTED, _SUBCLASS):
            for code in pattern.findall(text):
                found.setdefault(code, str(path.relative_to(SRC)))
    return found


def test_every_code_the_server_raises_is_in_the_catalogue() -> None:
    found = _codes_in_source()
    # The scan itself works: codes of the session, the transports and a subclass are all seen.
    assert {"unknown_voice", "synthesis_failed", "invalid_json", "context_closing"} <= set(found)
    missing = {code: where for code, where in found.items() if code not in CODES}
    assert missing == {}, f"codes raised but missing from voxflow.session.errors.CODES: {missing}"


def test_every_code_has_a_meaning_and_codes_are_snake_case() -> None:
    for code, known in CODES.items():
        assert re.fullmatch(r"[a-z]+(_[a-z]+)*", code), code
        assert known.meaning.strip(), code
        # The server's own failures are what the client cannot fix by changing the request.
        if known.server_fault:
            assert code in {"synthesis_failed", "encoding_failed", "service_unavailable"}


def test_retryable_defaults_to_the_codes_and_can_be_overridden() -> None:
    assert SessionError("too_many_contexts", "full").retryable is True
    assert SessionError("invalid_json", "nope").retryable is False
    assert SessionError("text_too_long", "flush first", retryable=True).retryable is True
    assert SessionError("too_many_contexts", "full", retryable=False).retryable is False
    # A code the catalogue does not know is the client's, and not retryable.
    assert SessionError("made_up", "?").retryable is False
    assert not is_retryable("made_up") and not is_server_fault("made_up")
    assert is_server_fault("synthesis_failed") and not is_server_fault("unknown_voice")


def test_session_error_carries_its_fields() -> None:
    error = SessionError("unknown_voice", "unknown voice 'x'")
    assert (error.code, error.message, str(error)) == (
        "unknown_voice",
        "unknown voice 'x'",
        error.message,
    )
    assert "unknown_voice" in repr(error)
    with pytest.raises(SessionError) as caught:
        raise error
    assert caught.value is error


def test_the_old_import_path_still_works() -> None:
    # Wyoming, the tests and other callers import it from the session module.
    assert session_module.SessionError is SessionError


def test_retryable_reaches_the_error_event() -> None:
    session = Session(SessionConfig(default_voice="joe", max_contexts=1), VoiceRegistry().get)
    session.start("a", StartOptions(), 0.0)
    session.start("b", StartOptions(), 0.0)
    session.error("c", "service_unavailable", "later", retryable=True)
    errors = [o for o in session.drain() if isinstance(o, ErrorOut)]
    assert [(e.context_id, e.code, e.retryable) for e in errors] == [
        ("b", "too_many_contexts", True),
        ("c", "service_unavailable", True),
    ]
