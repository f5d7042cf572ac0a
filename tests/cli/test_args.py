"""What the commands' parsers share (``voxflow.cli.args``), through the command line: a
comma-separated list of integers that is not one is a usage error."""

from __future__ import annotations

import pytest

from voxflow.cli.main import main


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
