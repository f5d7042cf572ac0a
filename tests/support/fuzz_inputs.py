"""What the fuzz tests feed the protocols, and what they check of every answer.

Inputs: valid messages of each protocol with a field mutated into anything JSON (as Python's
lenient ``json.dumps`` writes it) can carry: wrong types, NaN and the infinities, huge and negative
numbers, booleans where numbers go, strings with NUL, lone surrogates and other control
characters, nested values; plus frames that are not messages at all: random JSON, random text,
random bytes, JSON nested past the recursion limit, integers past Python's 4,300-digit limit.

Checks: every frame a protocol sends back is strict JSON (no NaN, no infinity) that encodes as
UTF-8, and every error carries a code from the catalogue.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from voxflow.session.errors import CODES
from voxflow.session.events import ContextMetrics

__all__ = [
    "FRAMES_PER_EXAMPLE",
    "FUZZ",
    "METRICS",
    "assert_catalogued",
    "assert_strict_json",
    "encode",
    "junk_frames",
    "mutated",
    "names",
    "nasty_text",
    "nasty_value",
]

# Reproducible (the same examples on every run, no example database) and free of timing: the
# machine may be slow and busy, which is no failure of the code under test.
FRAMES_PER_EXAMPLE = 10  # frames one example sends through a protocol
FUZZ = settings(
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.large_base_example,
        HealthCheck.filter_too_much,
    ],
)

METRICS = ContextMetrics(
    ttfa_ms=1.0, audio_ms=10.0, synth_ms=1.0, rtf=0.1, chunks=1, deadline_misses=0
)

# Characters that have broken servers: NUL, the other C0 and C1 controls, DEL, lone surrogates
# (high and low), a BOM, line and paragraph separators, zero-width and bidi controls, a private
# use character, non-characters, an emoji (a surrogate pair in JSON), a combining mark, digits
# that ``str.isdigit`` knows and ``int`` does not, and JSON's own escapes.
SPECIAL_CHARACTERS = (
    "\x00", "\x01", "\x07", "\x08", "\t", "\n", "\x0b", "\x0c", "\r", "\x1b", "\x1f", "\x7f",
    "\x80", "\x85", "\x9f", "\ud800", "\udbff", "\udc00", "\udfff", "\ufeff", "\u2028", "\u2029",
    "\u200b", "\u202e", "\ue000", "\ufffe", "\uffff", "\U0001f600", "\u0301", "²", "٣", " ", ".",
    "\\", '"',
)  # fmt: skip


@st.composite
def _nasty_text(draw: st.DrawFn) -> str:
    # Any text (``st.text`` never yields a lone surrogate), with one of the characters above put in
    # anywhere: as nasty as a text over a mixed alphabet, and much cheaper to draw.
    text = draw(st.text(max_size=20))
    special = draw(st.sampled_from(("", *SPECIAL_CHARACTERS)))
    at = draw(st.integers(0, len(text)))
    return text[:at] + special + text[at:]


nasty_text = _nasty_text()

# Numbers that have broken servers, beside hypothesis' own.
SPECIAL_NUMBERS: tuple[object, ...] = (
    float("nan"), float("inf"), float("-inf"), -0.0, 0, -1, 1e-320, 1e308, -1e308,
    2**31, 2**32, 2**63, 2**64, -(2**63), 10**300, 10**400, 0.25, 4.0, 4.000001, 0.2499999,
    True, False,
)  # fmt: skip

_SCALARS = st.one_of(
    st.none(),
    st.sampled_from(SPECIAL_NUMBERS),
    st.floats(),  # NaN and the infinities included
    st.integers(min_value=-(10**30), max_value=10**30),
    st.booleans(),
    nasty_text,
)


def _deep(depth: int) -> object:
    value: object = 1.5
    for level in range(depth):
        value = [value] if level % 2 else {"a": value}
    return value


# Any value JSON (as Python's json.dumps writes it) can carry: mostly scalars, some nested (up to
# a depth json.dumps still writes; deeper nesting is in ``junk_frames``).
nasty_value = st.one_of(
    _SCALARS,
    st.lists(_SCALARS, max_size=3),
    st.dictionaries(st.sampled_from(["text", "type", "speed", "", "\x00"]), _SCALARS, max_size=3),
    st.integers(1, 200).map(_deep),
)

# Names a client may send for a voice, a context, a format: real ones and nasty ones.
names = st.one_of(
    st.sampled_from(["joe", "a", "b", "default", "", "pcm_24000", "mp3_44100_128", "JOE"]),
    nasty_text,
    st.just("x" * 300),
)


@st.composite
def mutated(draw: st.DrawFn, templates: st.SearchStrategy[dict[str, Any]]) -> dict[str, Any]:
    """A valid message with one field replaced by a nasty value or dropped, or one added."""
    message = dict(draw(templates))
    action = draw(st.integers(0, 4))
    if action == 4 or not message:
        message[draw(nasty_text)] = draw(nasty_value)
        return message
    key = draw(st.sampled_from(sorted(message)))
    if action == 0:
        del message[key]
    else:
        message[key] = draw(nasty_value)
    return message


def encode(message: object, ascii_only: bool = True) -> str:
    """``message`` as lenient JSON text: NaN and Infinity as Python writes them, a lone surrogate
    as its ``\\ud800`` escape (``ascii_only``) or as itself."""
    return json.dumps(message, ensure_ascii=ascii_only)


def _nested(depth: int, opener: str, closer: str, inner: str = "1") -> str:
    return opener * depth + inner + closer * depth


# Frames that are not a protocol's messages at all.
junk_frames = st.one_of(
    st.builds(encode, nasty_value),
    nasty_text,
    st.binary(max_size=64).map(lambda raw: raw.decode("utf-8", "replace")),
    # Nested about as deep as the recursion limit, and far past it.
    st.sampled_from([1, 2, 500, 990, 1_000, 5_000, 100_000]).map(lambda n: _nested(n, "[", "]")),
    st.sampled_from([900, 1_000, 50_000]).map(lambda n: _nested(n, '{"a":', "}")),
    # Integers past Python's 4,300-digit limit for int() and str().
    st.sampled_from([4_300, 4_301, 5_000]).map(lambda n: '{"type": "text", "n": ' + "9" * n + "}"),
    st.sampled_from(
        [
            "",
            "{",
            "null",
            "NaN",
            '{"type": "start", "speed": NaN}',
            '{"type": "start", "speed": Infinity}',
            '{"type": "start", "speed": -Infinity}',
            '{"type": "start", "speed": 1e400}',
            '{"type": "cancel", "played_ms": NaN}',
            '{"type": "cancel", "played_ms": -1e400}',
            '{"text": "\\ud800"}',
            '{"\\udc00": 1}',
            '{"text": "a\\u0000b"}',
        ]
    ),
)


def _refuse_constant(name: str) -> object:
    raise AssertionError(f"{name} in a reply: not JSON")


def assert_strict_json(frame: str | bytes) -> Any:
    """``frame`` is strict JSON (no NaN, no infinity) that encodes as UTF-8; its value."""
    raw = frame.encode("utf-8") if isinstance(frame, str) else frame
    value = json.loads(raw.decode("utf-8"), parse_constant=_refuse_constant)
    json.dumps(value, allow_nan=False, ensure_ascii=False).encode("utf-8")
    return value


def assert_catalogued(code: str) -> None:
    assert code in CODES, f"error code {code!r} is not in voxflow.session.errors.CODES"


def weighted_mix(*weighted: tuple[int, st.SearchStrategy[Any]]) -> st.SearchStrategy[Any]:
    """Each strategy drawn about its weight's share of the time (``st.one_of`` flattens the ones
    it is given into equal branches: a family of seven junk strategies would outnumber the
    messages)."""
    choices = [strategy for weight, strategy in weighted for _ in range(weight)]
    return st.integers(0, len(choices) - 1).flatmap(lambda i: choices[i])


class ErrorLog(logging.Handler):
    """Every record voxflow logs at ERROR or above (an exception a protocol caught and logged, a
    turn that ended out of order): a generated input must leave none."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)
