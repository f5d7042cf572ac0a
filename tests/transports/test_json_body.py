"""Decoding client JSON frames: every malformed frame is a ``SessionError``, never a crash."""

from __future__ import annotations

import json

import pytest

from tests.support.bad_frames import BAD_FRAMES
from voxflow.session.errors import SessionError
from voxflow.transports.json_body import BodyError, RequestBody, check_decoded, decode_object, dump


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


def test_numbers_json_has_decode_and_nan_never_goes_out() -> None:
    assert decode_object('{"a": 1e308, "b": -0.0, "c": 10, "d": 1.5e-320}')["a"] == 1e308
    for bad in (float("nan"), float("inf"), float("-inf")):
        with pytest.raises(ValueError):
            dump({"played_ms": bad})


def test_values_from_a_lenient_decoder_are_checked_the_same_way() -> None:
    check_decoded({"text": "smile \U0001f600", "n": [1.5, {"x": None}]})
    for bad, code in (
        ({"speed": float("nan")}, "invalid_json"),
        ({"a": [[{"b": float("-inf")}]]}, "invalid_json"),
        ({"text": "a\ud800"}, "invalid_message"),
        ({"\udc00": 1}, "invalid_message"),
    ):
        with pytest.raises(SessionError) as caught:
            check_decoded(bad)
        assert caught.value.code == code
    # As deep as a decoder allows, and deeper: the walk does not recurse.
    deep: object = float("nan")
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(SessionError):
        check_decoded({"a": deep})


class _Body(RequestBody):
    text: str
    speed: float = 1.0
    seed: int | None = None


@pytest.mark.parametrize(
    ("body", "code", "field"),
    [
        ({"speed": 1.0}, "invalid_request", "text"),
        ({"text": "a", "speed": True}, "invalid_request", "speed"),
        ({"text": "a", "speed": "1"}, "invalid_request", "speed"),
        ({"text": "a", "seed": True}, "invalid_request", "seed"),
        ({"text": 5}, "invalid_request", "text"),
        ({"text": "a", "speed": float("nan")}, "invalid_json", None),
        ({"text": "a\ud800"}, "invalid_message", None),
        (["text"], "invalid_message", None),
        ("text", "invalid_message", None),
        (None, "invalid_message", None),
        (b'{"text": "a", "speed": NaN}', "invalid_json", None),
        (b"{nope", "invalid_json", None),
        (b"[" * 100_000, "invalid_json", None),
    ],
)
def test_a_request_body_records_its_refusal_instead_of_failing(
    body: object, code: str, field: str | None
) -> None:
    refused = _Body.model_validate(body)  # never raises: the endpoint answers in its own shape
    with pytest.raises(BodyError) as caught:
        refused.checked()
    assert (caught.value.code, caught.value.field) == (code, field)
    dump({"message": caught.value.message}).encode("utf-8")


def test_a_request_body_that_is_fine_is_strict_about_types() -> None:
    body = _Body.model_validate({"text": "hi", "speed": 2, "seed": 7, "unknown": [1]}).checked()
    assert (body.text, body.speed, body.seed) == ("hi", 2.0, 7)
    assert _Body.model_validate(b'{"text": "raw bytes"}').checked().text == "raw bytes"
