"""The bootstrap keys file (service/bootstrap_keys.py): where it goes, how it is made, and
that no key stays valid that nobody can read. (Real `holdpoint serve` processes:
tests/api/cli/test_bootstrap_keys.py.)"""

from __future__ import annotations

import os
import stat
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from api.cli.serve import SettingsError, server_settings
from domain.access.keyring import Keyring
from domain.record.store import open_store
from service.bootstrap_keys import (
    BootstrapKeysFileError,
    bootstrap_keys_path,
    claim_keys_file,
)
from service.settings import ServerSettings
from tests.api.http.test_serve import keys_in_file
from tests.ci import missing


@contextmanager
def umask(mask: int) -> Iterator[None]:
    previous = os.umask(mask)
    try:
        yield
    finally:
        os.umask(previous)


def test_the_file_goes_beside_a_sqlite_store_else_into_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    beside = ServerSettings(store_url="sqlite:///./var/holdpoint.db")
    assert bootstrap_keys_path(beside) == tmp_path / "var" / "holdpoint.bootstrap-keys"
    absolute = ServerSettings(store_url=f"sqlite:///{tmp_path / 'data' / 'h.db'}")
    assert bootstrap_keys_path(absolute) == tmp_path / "data" / "h.bootstrap-keys"
    for url in ("memory://", "postgresql://u:p@db:5432/holdpoint"):
        assert bootstrap_keys_path(ServerSettings(store_url=url)) == (
            tmp_path / "holdpoint-bootstrap-keys"
        )
    chosen = beside.updated(bootstrap_keys_file="keys/first")
    assert bootstrap_keys_path(chosen) == tmp_path / "keys" / "first"


def test_the_setting_is_read_from_the_environment_below_the_config_file(monkeypatch):
    monkeypatch.setenv("HOLDPOINT_STORE", "memory://")
    monkeypatch.setenv("HOLDPOINT_BOOTSTRAP_KEYS_FILE", "/run/secrets/keys")
    assert ServerSettings.from_env().bootstrap_keys_file == "/run/secrets/keys"
    table = {"bootstrap_keys_file": "/etc/holdpoint/keys"}
    assert server_settings("h.toml", table, {}).bootstrap_keys_file == "/etc/holdpoint/keys"


@pytest.mark.parametrize("value", [3, "", "  "])
def test_a_keys_file_setting_that_is_no_path_is_refused_naming_the_config_file(value):
    with pytest.raises(SettingsError, match=r"in the config file h.toml: .*bootstrap_keys_file"):
        server_settings("h.toml", {"bootstrap_keys_file": value}, {})


def test_a_store_with_keys_claims_no_file(tmp_path):
    with open_store("memory://") as store:
        keyring = Keyring(store)
        keyring.create("rita", "reviewer")
        assert claim_keys_file(keyring, tmp_path / "keys") is None
    assert not (tmp_path / "keys").exists()


@pytest.mark.parametrize("mask", [0o000, 0o022, 0o277])
def test_the_file_is_0600_and_the_folders_it_makes_0700_whatever_the_umask(tmp_path, mask):
    # Given a folder that exists (0755), and a keys file two folders below it
    there = tmp_path / "there"
    there.mkdir()
    there.chmod(0o755)
    path = there / "a" / "b" / "keys"
    with open_store("memory://") as store, umask(mask):
        keyring = Keyring(store)

        # When the file is claimed and the keys are made
        claimed = claim_keys_file(keyring, path)
        assert claimed is not None
        made = claimed.make_keys(keyring, "memory://")

    # Then the file is exactly 0600, the folders made exactly 0700, the one there untouched
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    for folder in (there / "a", there / "a" / "b"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE(there.stat().st_mode) == 0o755
    assert keys_in_file(path) == {info.role: raw for info, raw in made}


def test_keys_made_meanwhile_by_another_process_leave_no_file(tmp_path):
    # Given the file claimed on an empty store
    path = tmp_path / "keys"
    with open_store(f"sqlite:///{tmp_path / 'h.db'}") as store:
        claimed = claim_keys_file(Keyring(store), path)
        assert claimed is not None
        # And another process on the store makes the first keys before this one does
        with open_store(f"sqlite:///{tmp_path / 'h.db'}") as other:
            assert len(Keyring(other).ensure_bootstrap_keys()) == 3

        # When this one makes its keys
        made = claimed.make_keys(Keyring(store), "sqlite")

    # Then it made none, and removed the empty file it had claimed
    assert made == []
    assert not path.exists()


def test_a_released_file_is_removed_only_while_it_is_the_one_claimed(tmp_path):
    path = tmp_path / "keys"
    with open_store("memory://") as store:
        claimed = claim_keys_file(Keyring(store), path)
        assert claimed is not None
        path.unlink()
        path.write_text("someone else's\n")  # replaced meanwhile: left alone
        claimed.release()
        claimed.release()  # a second release does nothing
    assert path.read_text() == "someone else's\n"


@contextmanager
def full_disk(folder: Path) -> Iterator[Path]:
    """A small tmpfs at `folder` (root only), filled up, unmounted afterwards."""
    folder.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(folder)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        missing("the full disk test", f"no small tmpfs: {mounted.stderr.strip()}")
    try:
        with (folder / "filler").open("wb", buffering=0) as filler:
            try:
                while True:
                    filler.write(b"x" * 4096)
            except OSError:
                pass  # full
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=True)


def test_keys_that_cannot_be_written_are_revoked_and_the_start_refused(tmp_path):
    # Given the file claimed on a disk that is full (an empty file needs no block)
    with full_disk(tmp_path / "disk") as disk, open_store("memory://") as store:
        keyring = Keyring(store)
        claimed = claim_keys_file(keyring, disk / "keys")
        assert claimed is not None

        # When the keys are made, and cannot be written
        with pytest.raises(BootstrapKeysFileError) as refused:
            claimed.make_keys(keyring, "memory://")

        # Then the error names the file and the setting, every key made is revoked,
        # and no empty file is left
        message = str(refused.value)
        assert message.startswith(f"Cannot write the bootstrap keys file {disk / 'keys'} (")
        assert "HOLDPOINT_BOOTSTRAP_KEYS_FILE" in message
        keys = keyring.list()
        assert len(keys) == 3
        assert all(key.revoked for key in keys)
        assert not (disk / "keys").exists()
