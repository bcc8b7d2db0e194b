"""A PostgreSQL server of the test's own, to stop and start (a database outage).

The shared test server cannot be stopped under other tests, so an outage test
runs `initdb` into a fresh folder and `pg_ctl` on a free port, as the
`postgres` user (PostgreSQL refuses to run as root). It needs Debian's
PostgreSQL binaries and root, as `.ci/run` has; elsewhere it is skipped with
the reason, except in CI, where it fails.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.api.http_harness import listening_socket
from tests.ci import missing


def _binaries() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    return Path(found[-1]).parent if found else None


class PrivatePostgres:
    def __init__(self, folder: Path, port: int, binaries: Path) -> None:
        self.folder, self.port, self.binaries = folder, port, binaries
        self.url = f"postgresql://holdpoint@127.0.0.1:{port}/postgres?connect_timeout=2"

    def _as_postgres(self, *command: str) -> None:
        subprocess.run(
            ["runuser", "-u", "postgres", "--", *command],
            check=True,
            timeout=120,
            capture_output=True,
        )

    def start(self) -> None:
        options = f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.folder}"
        self._as_postgres(
            str(self.binaries / "pg_ctl"),
            "-D",
            str(self.folder / "data"),
            "-o",
            options,
            "-l",
            str(self.folder / "log"),
            "-w",
            "start",
        )

    def stop(self) -> None:
        self._as_postgres(
            str(self.binaries / "pg_ctl"),
            "-D",
            str(self.folder / "data"),
            "-m",
            "fast",
            "-w",
            "stop",
        )


@contextmanager
def private_postgres() -> Iterator[PrivatePostgres]:
    binaries = _binaries()
    problem = None
    if binaries is None:
        problem = "no PostgreSQL binaries under /usr/lib/postgresql (run .ci/postgres.sh)"
    elif os.geteuid() != 0 or shutil.which("runuser") is None:
        problem = "a private PostgreSQL server needs root (to run it as the postgres user)"
    if problem is not None:
        missing("the database outage tests", problem)
    assert binaries is not None
    folder = Path(tempfile.mkdtemp(prefix="holdpoint-pg-", dir="/tmp"))
    folder.chmod(0o755)
    shutil.chown(folder, "postgres", "postgres")
    with listening_socket() as probe:
        port = probe.getsockname()[1]
    server = PrivatePostgres(folder, port, binaries)
    server._as_postgres(
        str(binaries / "initdb"),
        "-D",
        str(folder / "data"),
        "-U",
        "holdpoint",
        "--auth=trust",
        "--no-sync",
    )
    server.start()
    try:
        yield server
    finally:
        try:
            server.stop()
        finally:
            shutil.rmtree(folder, ignore_errors=True)
