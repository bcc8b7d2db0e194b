"""A SQLite store in a folder that cannot be written (a read-only mount).

SQLite in WAL mode needs its -wal and -shm files beside the database, so such a
store cannot be opened: every command says so in one line, exits 2, and leaves
the file as it was. (A PostgreSQL store that turns read-only under a running
server is in tests/api/http/test_store_outage.py.)
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.ci import missing


@contextmanager
def read_only_view(folder: Path, view: Path) -> Iterator[Path]:
    """`folder` bind-mounted read-only at `view` (root only), unmounted afterwards."""
    if os.geteuid() != 0:
        missing("the read-only store test", "a read-only mount needs root")
    view.mkdir()
    subprocess.run(["mount", "--bind", str(folder), str(view)], check=True)
    try:
        subprocess.run(["mount", "-o", "remount,bind,ro", str(view)], check=True)
        yield view
    finally:
        subprocess.run(["umount", str(view)], check=True)


def holdpoint(store: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOLDPOINT_STORE": f"sqlite:///{store}"}
    command = [sys.executable, "-m", "api.cli.main", *args]
    return subprocess.run(command, check=False, env=env, capture_output=True, text=True, timeout=60)


def test_a_store_in_a_read_only_folder_is_refused_in_one_line_and_left_as_it_was(tmp_path):
    # Given a store with the demo's thread in it, its folder then mounted read-only
    folder = tmp_path / "data"
    folder.mkdir()
    assert holdpoint(folder / "holdpoint.db", "demo").returncode == 0
    before = hashlib.sha256((folder / "holdpoint.db").read_bytes()).hexdigest()
    with read_only_view(folder, tmp_path / "view") as view:
        # When commands that read and one that serves are run on it
        answers = [
            holdpoint(view / "holdpoint.db", "threads", "list"),
            holdpoint(view / "holdpoint.db", "verify"),
            holdpoint(view / "holdpoint.db", "serve", "--port", "0"),
        ]
    # Then each exits 2 with one line that names the file and the cause, and no traceback
    for answer in answers:
        assert answer.returncode == 2, answer.stderr
        assert "Traceback" not in answer.stderr
        assert f"cannot open the SQLite file {view / 'holdpoint.db'}" in answer.stderr
        assert "its folder must be writable" in answer.stderr
    # And the file is byte for byte as it was
    assert hashlib.sha256((folder / "holdpoint.db").read_bytes()).hexdigest() == before
