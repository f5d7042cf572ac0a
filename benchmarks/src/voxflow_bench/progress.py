"""A one-line text progress bar, redrawn in place with carriage returns (no dependency)."""

from __future__ import annotations

from typing import TextIO


class ProgressLine:
    """``[#####-----]  12/40  label`` on ``out``; does nothing when ``out`` is None."""

    def __init__(self, out: TextIO | None, total: int, width: int = 24) -> None:
        if total < 0 or width < 1:
            raise ValueError("total must be >= 0 and width >= 1")
        self._out = out
        self._total = total
        self._width = width
        self._done = 0
        self._shown = 0  # length of the line on screen, so a shorter one can blank its tail

    @property
    def done(self) -> int:
        return self._done

    def advance(self, label: str, steps: int = 1) -> None:
        self._done = min(self._total, self._done + steps)
        self.show(label)

    def show(self, label: str) -> None:
        if self._out is None:
            return
        filled = self._width if self._total == 0 else self._width * self._done // self._total
        line = (
            f"[{'#' * filled}{'-' * (self._width - filled)}] {self._done:>4}/{self._total} {label}"
        )
        padding = " " * max(0, self._shown - len(line))
        self._out.write(f"\r{line}{padding}")
        self._out.flush()
        self._shown = len(line)

    def finish(self) -> None:
        """End the line, so what is written next starts on a fresh one."""
        if self._out is not None and self._shown:
            self._out.write("\n")
            self._out.flush()
            self._shown = 0
