"""A first start's API keys go to a file only its owner can read, never to a log.

Real `holdpoint serve` processes on a free port (`--port 0`), their standard
output a pipe as a container's is (or a terminal, through a pty), on real
SQLite files and the test PostgreSQL server.
"""

from __future__ import annotations

import os
import pty
import queue
import signal
import stat
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest

from tests.api.http.test_serve import DONE_MARK, exported, keys_in_file
from tests.cli_process import holdpoint
from tests.persistence.test_read_only_store import read_only_view
from tests.serving import ROOT, Serving

ROLE_CALLS = {  # a request each role may make, and only a valid key of that role
    "agent": ("POST", "/threads", {"json": {"thread_id": "t-1"}}),
    "reviewer": ("GET", "/approvals", {}),
    "auditor": ("GET", "/audit/refusals", {}),
}


def secrets_of(keys: dict[str, str]) -> list[str]:
    """The secret part of each key (after `hp_<key id>_`), the part that must never show."""
    return [key[len("hp_") + 13 :] for key in keys.values()]


def key_ids(store: str) -> set[str]:
    """The key ids `holdpoint keys list` shows for the store."""
    listed = holdpoint(store, "keys", "list")
    assert listed.returncode == 0, listed.stderr
    return {line.split()[0] for line in listed.stdout.splitlines()[1:-1]}


def serve_once(store: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`holdpoint serve --port 0` that is expected to stop by itself."""
    return subprocess.run(
        [sys.executable, "-m", "api.cli.main", "serve", "--port", "0"],
        cwd=cwd,
        env={**os.environ, "HOLDPOINT_STORE": store, "PYTHONPATH": str(ROOT), **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_first_start_writes_working_keys_to_a_private_file_and_prints_none(tmp_path):
    # Given an empty SQLite store in var/, and serve's standard output a pipe
    store = f"sqlite:///{tmp_path / 'var' / 'holdpoint.db'}"
    serving = Serving(store, cwd=tmp_path)

    # When it starts
    lines = serving.banner(DONE_MARK)
    url = exported(lines)["URL"]

    # Then the keys are in var/holdpoint.bootstrap-keys, readable by its owner only,
    # and the banner names the file
    path = tmp_path / "var" / "holdpoint.bootstrap-keys"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert f"  keys file: {path}" in lines
    keys = keys_in_file(path)
    assert set(keys) == set(ROLE_CALLS)
    # And each key works against the server, with its role; a made-up one does not
    with httpx.Client(base_url=url, timeout=60) as http:
        for role, (method, route, body) in ROLE_CALLS.items():
            answer = http.request(method, route, headers={"x-api-key": keys[role]}, **body)
            assert answer.status_code == 200, (role, answer.text)
        forged = keys["auditor"][:-1] + ("A" if keys["auditor"][-1] != "A" else "B")
        assert http.get("/audit/refusals", headers={"x-api-key": forged}).status_code == 401
    # And the file names each key's role, principal and key id, as `keys list` has them
    text = path.read_text()
    for role, key in keys.items():
        key_id = key.split("_")[1]
        assert f"# role {role}, principal {role}, key id {key_id}:" in text
    assert {key.split("_")[1] for key in keys.values()} == key_ids(store)

    # And no key, not even its secret, is in what serve wrote to stdout or stderr
    code, stderr = serving.stop()
    assert code == 0, stderr
    output = "\n".join([*lines, *serving.rest(), stderr])
    assert "hp_" not in output
    for secret in secrets_of(keys):
        assert secret not in output


def test_a_second_start_leaves_the_file_as_it_was_and_makes_no_key(tmp_path):
    # Given a store whose first start wrote its keys file
    store = f"sqlite:///{tmp_path / 'holdpoint.db'}"
    path = tmp_path / "holdpoint.bootstrap-keys"
    first = Serving(store, cwd=tmp_path)
    first.banner(DONE_MARK)
    assert first.stop()[0] == 0
    before = path.stat()
    text, made = path.read_text(), key_ids(store)

    # When it starts again
    again = Serving(store, cwd=tmp_path)
    lines = again.banner("API keys:")
    code, stderr = again.stop()

    # Then the file is the same file, not rewritten, and the banner says where it is
    assert code == 0, stderr
    after = path.stat()
    assert (after.st_ino, after.st_mtime_ns, after.st_size) == (
        before.st_ino,
        before.st_mtime_ns,
        before.st_size,
    )
    assert path.read_text() == text
    assert lines[-1].startswith(f"API keys: the first start's are in {path}; more with")
    assert key_ids(store) == made


def said(stderr: str) -> list[str]:
    """What the command says to its user: stderr but the log's JSON records (the policy in
    force is logged as the start records it, before the keys)."""
    return [line for line in stderr.splitlines() if not line.startswith("{")]


def test_a_read_only_folder_fails_the_start_in_one_line_and_makes_no_key(tmp_path):
    # Given an empty store, and a keys file set in a folder mounted read-only
    store = f"sqlite:///{tmp_path / 'holdpoint.db'}"
    (tmp_path / "secrets").mkdir()
    with read_only_view(tmp_path / "secrets", tmp_path / "view") as view:
        path = view / "keys"

        # When serve starts
        ran = serve_once(store, tmp_path, {"HOLDPOINT_BOOTSTRAP_KEYS_FILE": str(path)})

        # Then it stops with one line naming the path and the setting, exit status 2
        assert ran.returncode == 2, ran.stderr
        assert ran.stdout == ""
        assert said(ran.stderr) == [
            f"holdpoint: error: Cannot write the bootstrap keys file {path} (Read-only file "
            "system): choose another file with HOLDPOINT_BOOTSTRAP_KEYS_FILE or `[server] "
            "bootstrap_keys_file`, or make a key first with `holdpoint keys create` (this "
            "store has no API key yet, and none was made)"
        ]
        assert not path.exists()
    # And no key was recorded
    assert key_ids(store) == set()


@pytest.mark.parametrize("kind", ["file", "symlink"])
def test_a_keys_file_already_there_is_never_overwritten_or_followed(tmp_path, kind):
    # Given an empty store, and at its keys file's path a file from before, or a symlink
    store = f"sqlite:///{tmp_path / 'holdpoint.db'}"
    path = tmp_path / "holdpoint.bootstrap-keys"
    elsewhere = tmp_path / "elsewhere"
    if kind == "file":
        path.write_text("old keys\n")
    else:
        path.symlink_to(elsewhere)

    # When serve starts
    ran = serve_once(store, tmp_path, {})

    # Then it refuses in one line, writes nothing there or through the link, makes no key
    assert ran.returncode == 2, ran.stderr
    [line] = said(ran.stderr)
    assert line.startswith(
        f"holdpoint: error: The bootstrap keys file {path} exists already and is never "
        "overwritten: move it away, or choose another file with HOLDPOINT_BOOTSTRAP_KEYS_FILE"
    )
    if kind == "file":
        assert path.read_text() == "old keys\n"
    else:
        assert path.is_symlink()
        assert not elsewhere.exists()
    assert key_ids(store) == set()


def test_the_keys_file_of_the_config_file_in_a_new_folder_is_made_private(tmp_path):
    # Given `[server] bootstrap_keys_file` in a holdpoint.toml, a path under missing folders
    (tmp_path / "holdpoint.toml").write_text('[server]\nbootstrap_keys_file = "secret/keys"\n')
    store = f"sqlite:///{tmp_path / 'holdpoint.db'}"

    # When serve starts in that folder
    serving = Serving(store, "--config", str(tmp_path / "holdpoint.toml"), cwd=tmp_path)
    lines = serving.banner(DONE_MARK)
    assert serving.stop()[0] == 0

    # Then the folder it made is 0700, the file 0600, the banner names it, no key beside it
    path = tmp_path / "secret" / "keys"
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert f"  keys file: {path}" in lines
    assert set(keys_in_file(path)) == set(ROLE_CALLS)
    assert not (tmp_path / "holdpoint.bootstrap-keys").exists()


def test_on_postgresql_the_keys_file_is_in_the_working_directory(postgres_url, tmp_path):
    # Given an empty PostgreSQL store, serve started in a folder of its own
    serving = Serving(postgres_url, cwd=tmp_path)

    # When it starts
    lines = serving.banner(DONE_MARK)
    code, stderr = serving.stop()

    # Then the keys are in ./holdpoint-bootstrap-keys, and the story reads them from there
    assert code == 0, stderr
    path = tmp_path / "holdpoint-bootstrap-keys"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert f"  . {path}" in lines
    assert {key.split("_")[1] for key in keys_in_file(path).values()} == key_ids(postgres_url)


class Terminal:
    """`holdpoint serve` with its standard output a pseudo-terminal, read line by line."""

    def __init__(self, store: str, cwd: Path) -> None:
        main, child = pty.openpty()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "api.cli.main", "serve", "--port", "0"],
            cwd=cwd,
            env={**os.environ, "HOLDPOINT_STORE": store, "PYTHONPATH": str(ROOT)},
            stdout=child,
            stderr=subprocess.PIPE,
            text=True,
        )
        os.close(child)
        self.main = main
        self.lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        with os.fdopen(self.main, "rb") as output:
            try:
                for line in output:
                    self.lines.put(line.decode().rstrip("\r\n"))
            except OSError:  # EIO once the process has closed the terminal
                pass
        self.lines.put(None)

    def banner(self, last: str) -> list[str]:
        seen = []
        while (line := self.lines.get(timeout=60)) is not None:
            seen.append(line)
            if line.startswith(last):
                return seen
        pytest.fail(f"serve ended: {seen}")

    def stop(self) -> int:
        self.process.send_signal(signal.SIGTERM)
        self.process.communicate(timeout=60)
        return self.process.returncode


def test_on_a_terminal_the_first_start_shows_the_keys_it_wrote(tmp_path):
    # Given an empty store, and serve's standard output a terminal
    serving = Terminal(f"sqlite:///{tmp_path / 'holdpoint.db'}", tmp_path)

    # When it starts
    lines = serving.banner(DONE_MARK)
    assert serving.stop() == 0

    # Then it shows each key the file holds, and the story sets them as they are
    keys = keys_in_file(tmp_path / "holdpoint.bootstrap-keys")
    for role, key in keys.items():
        assert any(line.split()[:2] == [role, key] for line in lines), (role, lines)
    assert f"  export AGENT={keys['agent']}" in lines
    assert f"  export REVIEWER={keys['reviewer']} AUDITOR={keys['auditor']}" in lines
    assert f"  keys file: {tmp_path / 'holdpoint.bootstrap-keys'}" in lines
