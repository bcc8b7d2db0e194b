"""A progress bar for long CLI work, on stderr (stdout stays for results).

On a terminal it redraws one line in place, cut to the terminal's width (a
line that wrapped could not be redrawn). Elsewhere (a pipe, a log file, CI)
it writes whole lines, at most one per tenth of the way: a long job's log
stays short, and the last line says where it ended.
"""

from __future__ import annotations

import os
import sys
from typing import TextIO

WIDTH = 30
STEPS = 10  # lines per name when not on a terminal, at most (plus the first and the last)
COLUMNS = 80  # a terminal's width when it does not tell


class ProgressBar:
    """Call it as `bar(name, done, total)`: one bar per name, in turn.

    With `label`, every report is drawn under the label, whatever its name:
    for work that reports in parts but advances as one (a rebuild's one pass
    over the log feeds every read model it names).
    """

    def __init__(
        self, stream: TextIO | None = None, *, label: str | None = None, tty: bool | None = None
    ) -> None:
        self.stream = sys.stderr if stream is None else stream
        self.label = label
        self.tty = _is_tty(self.stream) if tty is None else tty
        self.current: str | None = None
        self._last: tuple[str, int, int] | None = None
        self._drawn = 0  # characters of the line on the terminal
        self._step = -1  # the last tenth written as a line
        self._unwritten: str | None = None  # the last report, when it was not written

    def __call__(self, name: str, done: int, total: int) -> None:
        name = self.label or name
        if (name, done, total) == self._last:
            return
        self._last = (name, done, total)
        fraction = 1.0 if total <= 0 else min(max(done / total, 0.0), 1.0)
        filled = int(fraction * WIDTH)
        rest = f" [{'#' * filled}{'.' * (WIDTH - filled)}] {done:>9,}/{total:,} {fraction:>4.0%}"
        if self.tty:
            self._redraw(name, rest)
        else:
            self._write_line(name, rest, int(fraction * STEPS))
        self.current = name
        self.stream.flush()

    def finish(self) -> None:
        """End the bar's line (or write its last report, if it was not written)."""
        if self.tty and self.current is not None:
            self.stream.write("\n")
        elif self._unwritten is not None:
            self.stream.write(self._unwritten + "\n")
        self.current, self._last, self._drawn, self._step, self._unwritten = None, None, 0, -1, None
        self.stream.flush()

    def _redraw(self, name: str, rest: str) -> None:
        if self.current not in (None, name):
            self.stream.write("\n")
            self._drawn = 0
        fits = _columns(self.stream) - 1  # writing the last column wraps on some terminals
        room = fits - len(rest)
        if len(name) > room:
            name = name[: room - 1] + "…" if room > 1 else ""
        text = (name.ljust(min(20, room)) + rest)[:fits]
        self.stream.write("\r" + text + " " * max(self._drawn - len(text), 0))
        self._drawn = len(text)

    def _write_line(self, name: str, rest: str, step: int) -> None:
        text = f"{name:<20}{rest}"
        if name != self.current or step > self._step:
            self.stream.write(text + "\n")
            self._step, self._unwritten = step, None
        else:
            self._unwritten = text


def _is_tty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # not a file, or closed
        return False


def _columns(stream: TextIO) -> int:
    try:
        columns = os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, OSError, ValueError):
        return COLUMNS
    return columns if columns > 0 else COLUMNS
