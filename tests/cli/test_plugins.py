"""The contract of the command line's plugins (``voxflow.cli.plugins``): its argument type
``comma_ints``, alone and through the parsers of the command line and of the benchmarks'
commands, where a comma-separated list of integers that is not one is a usage error."""

from __future__ import annotations

import argparse

import pytest

from voxflow.cli.main import main
from voxflow.cli.plugins import comma_ints


def test_comma_ints_reads_a_list_and_skips_empty_entries() -> None:
    assert comma_ints("50,120, 200,") == (50, 120, 200)


@pytest.mark.parametrize("value", ["", ",", "1,x"])
def test_comma_ints_refuses_what_is_not_a_list_of_integers(value: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        comma_ints(value)


def test_chunks_rejects_a_bad_schedule(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["chunks", "--schedule", "a,b"])
    assert "comma-separated integers" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv", [["chunks", "--schedule", "50,x"], ["bench", "--concurrency", ","]]
)
def test_a_list_of_integers_that_is_not_one_is_a_usage_error(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    assert "expected" in capsys.readouterr().err
