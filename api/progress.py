"""A progress bar for long CLI work, on stderr (stdout stays for results)."""

from __future__ import annotations

import sys
from typing import TextIO

WIDTH = 30


class ProgressBar:
    """Call it as `bar(name, done, total)`; it redraws one line per name."""

    def __init__(self, stream: TextIO = sys.stderr) -> None:
        self.stream = stream
        self.current: str | None = None

    def __call__(self, name: str, done: int, total: int) -> None:
        if self.current not in (None, name):
            self.stream.write("\n")
        self.current = name
        fraction = 1.0 if total <= 0 else min(done / total, 1.0)
        filled = int(fraction * WIDTH)
        bar = "#" * filled + "." * (WIDTH - filled)
        self.stream.write(f"\r{name:<20} [{bar}] {done:>9,}/{total:,} {fraction:>4.0%}")
        self.stream.flush()

    def finish(self) -> None:
        if self.current is not None:
            self.stream.write("\n")
            self.stream.flush()
