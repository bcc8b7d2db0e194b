"""A `holdpoint serve` subprocess as the tests drive it: its banner, its log, its end."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import ClassVar

import pytest

ROOT = Path(__file__).resolve().parents[1]


class Serving:
    """A `holdpoint serve` process, its banner read line by line from stdout; its log
    (stderr) read as it comes, so that a long run never blocks on a full pipe.

    Every one started is in `started` until `kill_started` (after each test, from
    tests/conftest.py) kills it if it still runs: a test that fails before it stops its
    server does not leave it running."""

    started: ClassVar[list[Serving]] = []

    def __init__(
        self, store: str, *args: str, cwd: Path = ROOT, env: dict[str, str] | None = None
    ) -> None:
        env = {**os.environ, "HOLDPOINT_STORE": store, "PYTHONPATH": str(ROOT), **(env or {})}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "api.cli.main", "serve", "--port", "0", *args],
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        Serving.started.append(self)
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.log: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        self._logging = threading.Thread(target=self._read_log, daemon=True)
        self._logging.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)  # end of output

    def _read_log(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.log.append(line)

    def _ended_log(self) -> str:
        """Its whole log, once the process has ended."""
        self.process.wait(timeout=60)
        self._logging.join(timeout=60)
        return "".join(self.log)

    def banner(self, last: str) -> list[str]:
        """The banner's lines, up to the first that starts with `last`."""
        seen = []
        while True:
            line = self.lines.get(timeout=60)
            if line is None:
                pytest.fail(f"serve ended: {seen}\n{self._ended_log()}")
            seen.append(line)
            if line.startswith(last):
                return seen

    def stop(self) -> tuple[int, str]:
        self.process.send_signal(signal.SIGTERM)
        log = self._ended_log()
        return self.process.returncode, log

    def rest(self) -> list[str]:
        """The lines of stdout not read yet, up to its end (once the process has ended)."""
        rest = []
        while (line := self.lines.get(timeout=60)) is not None:
            rest.append(line)
        return rest

    @classmethod
    def kill_started(cls) -> None:
        """Kill every server started so far that still runs, and forget them all."""
        while cls.started:
            process = cls.started.pop().process
            if process.poll() is None:
                process.kill()
                process.wait(timeout=60)
