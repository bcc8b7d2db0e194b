"""The first start's API keys, written to a file that only its owner can read.

`holdpoint serve` on a store with no API key makes an agent, a reviewer and an
auditor key. The store keeps only their hashes, so the file is the only copy:
it is never printed to a log (the banner shows the keys only on a terminal,
`api/cli/banner.py`, because standard output may be a container's log).

The file is claimed before any key is made: created empty with
O_CREAT|O_EXCL|O_NOFOLLOW and mode 0600, so an existing file is never
overwritten, a symlink is never followed, and a folder that cannot be
written stops the start with no key made. A folder Holdpoint creates for it
is made 0700. Where it goes: `bootstrap_keys_file` (`[server]` of a
holdpoint.toml, or HOLDPOINT_BOOTSTRAP_KEYS_FILE), else beside a SQLite
store's file (`var/holdpoint.bootstrap-keys` beside `var/holdpoint.db`), else
`./holdpoint-bootstrap-keys`.
"""

from __future__ import annotations

import os
import shlex
from datetime import UTC, datetime
from pathlib import Path

import structlog

from domain.access.keyring import KeyInfo, Keyring
from domain.errors import HoldpointError
from domain.record.store import backend_of, redacted, store_env
from service.settings import ServerSettings

log = structlog.get_logger()

FILE_MODE = 0o600
FOLDER_MODE = 0o700
DEFAULT_NAME = "holdpoint-bootstrap-keys"
SUFFIX = ".bootstrap-keys"
SETTING = "HOLDPOINT_BOOTSTRAP_KEYS_FILE or `[server] bootstrap_keys_file`"
# The shell variable each role's key is assigned to in the file (`. FILE` sets them).
VARIABLES = {
    "agent": "HOLDPOINT_AGENT_KEY",
    "reviewer": "HOLDPOINT_REVIEWER_KEY",
    "auditor": "HOLDPOINT_AUDITOR_KEY",
}
ROLE_HINTS = {
    "agent": "starts and runs threads",
    "reviewer": "decides interrupts",
    "auditor": "reads audit trails and reports",
}
_NO_KEY_MADE = (
    f"choose another file with {SETTING}, or make a key first with `holdpoint keys "
    "create` (this store has no API key yet, and none was made)"
)


class BootstrapKeysFileError(HoldpointError):
    """The first start's keys cannot be written: the server does not start."""


def bootstrap_keys_path(settings: ServerSettings) -> Path:
    """Where a first start writes its keys, as an absolute path."""
    if settings.bootstrap_keys_file:
        return Path(os.path.abspath(settings.bootstrap_keys_file))
    if backend_of(settings.store_url) == "sqlite":
        database = Path(os.path.abspath(store_env(settings.store_url)["SQLITE_DBNAME"]))
        return database.with_name(database.stem + SUFFIX)
    return Path(os.path.abspath(DEFAULT_NAME))


def claim_keys_file(keyring: Keyring, path: Path) -> ClaimedKeysFile | None:
    """The keys file, created empty and open, when the store has no key yet; else None.

    Raises BootstrapKeysFileError, naming the path and the setting, when it
    cannot be created (a read-only folder, a file already there).
    """
    if keyring.has_keys():
        return None
    try:
        _make_folders(path.parent)
        fd = os.open(
            path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, FILE_MODE
        )
    except FileExistsError:
        if keyring.has_keys():  # another process made the keys and the file meanwhile
            return None
        msg = (
            f"The bootstrap keys file {path} exists already and is never overwritten: "
            f"move it away, or {_NO_KEY_MADE}"
        )
        raise BootstrapKeysFileError(msg) from None
    except OSError as error:
        msg = f"Cannot write the bootstrap keys file {path} ({error.strerror}): {_NO_KEY_MADE}"
        raise BootstrapKeysFileError(msg) from None
    os.fchmod(fd, FILE_MODE)  # exactly 0600, whatever the umask
    return ClaimedKeysFile(path, fd)


class ClaimedKeysFile:
    """The keys file, created empty by `claim_keys_file`, until the keys are in it."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self._fd: int | None = fd

    def make_keys(self, keyring: Keyring, store_url: str) -> list[tuple[KeyInfo, str]]:
        """Make the bootstrap keys and write them here; [] when another process made them.

        Should writing fail (a full disk), the keys are revoked at once, so that no
        key that nobody can see stays valid, and BootstrapKeysFileError is raised.
        """
        made = keyring.ensure_bootstrap_keys()
        if not made:
            self.release()
            return []
        try:
            self._write(keys_file_text(self.path, made, store_url))
        except OSError as error:
            self.release()
            for info, _ in made:
                keyring.revoke(info.key_id, reason="its bootstrap keys file could not be written")
            msg = (
                f"Cannot write the bootstrap keys file {self.path} ({error.strerror}): the keys "
                f"made were revoked; free the space, or choose another file with {SETTING}, "
                "then make keys with `holdpoint keys create`"
            )
            raise BootstrapKeysFileError(msg) from None
        log.info("bootstrap keys written", path=str(self.path), keys=len(made))
        return made

    def release(self) -> None:
        """Close and remove the file unless the keys were written (no-op once they are)."""
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            opened = os.fstat(fd)
            current = os.lstat(self.path)
            if (opened.st_dev, opened.st_ino) == (current.st_dev, current.st_ino):
                self.path.unlink()  # ours, without the keys: only then removed
        except OSError:
            pass  # gone already, or replaced by someone else's file: left alone
        finally:
            os.close(fd)

    def _write(self, text: str) -> None:
        """Write the whole text and sync it; on failure the file stays claimed (and so is
        removed by `release`, part written or not)."""
        assert self._fd is not None
        data = text.encode()
        while data:
            data = data[os.write(self._fd, data) :]
        os.fsync(self._fd)
        fd, self._fd = self._fd, None
        os.close(fd)


def keys_file_text(path: Path, keys: list[tuple[KeyInfo, str]], store_url: str) -> str:
    """The file's text: comments, then one `HOLDPOINT_<ROLE>_KEY=...` line per key
    (a shell reads them with `. FILE`, as do env files)."""
    made_at = datetime.now(UTC).isoformat(timespec="seconds")
    lines = [
        f"# Holdpoint's first API keys, made by `holdpoint serve` at {made_at}",
        f"# on the store {redacted(store_url)}.",
        "# The store keeps only their hashes: this file is the only copy, readable by its",
        "# owner only. Move the keys to a secret store, then delete this file. More keys:",
        "# `holdpoint keys create --principal ID --role agent|reviewer|auditor|admin`.",
        f"# In a shell: . {shlex.quote(str(path))}",
    ]
    for info, raw in keys:
        hint = ROLE_HINTS.get(info.role, info.role)
        lines += [
            "#",
            f"# role {info.role}, principal {info.principal_id}, key id {info.key_id}: {hint}",
            f"{key_variable(info.role)}={raw}",
        ]
    return "\n".join(lines) + "\n"


def key_variable(role: str) -> str:
    """The variable a role's key is assigned to in the file."""
    return VARIABLES.get(role, f"HOLDPOINT_{role.upper()}_KEY")


def _make_folders(folder: Path) -> None:
    """Create the missing folders above the file, each 0700 (existing ones untouched)."""
    missing = []
    while not folder.exists():
        missing.append(folder)
        folder = folder.parent
    for made in reversed(missing):
        try:
            os.mkdir(made, FOLDER_MODE)
        except FileExistsError:
            continue  # made by another process meanwhile: not ours to change
        os.chmod(made, FOLDER_MODE)  # exactly 0700, whatever the umask
