"""Open a store by URL: where a graph's events live.

- `memory://`: in this process only (tests, notebooks).
- `sqlite:///relative/path.db` or `sqlite:////absolute/path.db`: the embedded
  default; the folder is created on demand. Options: `?synchronous=full`
  (default `normal`: see `persistence/sqlite.py` for what each survives) and
  `?timeout=SECONDS` (how long a writer waits for the lock, default 5).
- `postgresql://...`: the production store (see issue 3).

`HOLDPOINT_STORE` holds the URL for the CLI and the server; the default is
`sqlite:///./var/holdpoint.db`. The store configures the `eventsourcing`
library's own persistence modules by environment, so the domain never
imports a database driver.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

from eventsourcing.persistence import PersistenceError

from domain.application import Workflows
from domain.errors import HoldpointError

DEFAULT_STORE_URL = "sqlite:///./var/holdpoint.db"


class StoreURLError(HoldpointError, ValueError):
    """The store URL cannot be understood."""


class StoreUnavailableError(HoldpointError):
    """The store cannot be opened: a missing folder, a locked or unreadable file..."""


def store_url_from_env() -> str:
    return os.environ.get("HOLDPOINT_STORE") or DEFAULT_STORE_URL


def open_store(url: str | None = None) -> Workflows:
    """Open the store at `url` (default: `HOLDPOINT_STORE`, then SQLite)."""
    url = url or store_url_from_env()
    env = store_env(url)
    try:
        return Workflows(env=env, url=url)
    except (OSError, PersistenceError) as error:
        msg = f"Cannot open the store {redacted(url)}: {error}"
        raise StoreUnavailableError(msg) from None


def redacted(url: str) -> str:
    """The URL with any password replaced by ***, for messages and logs."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return parts._replace(netloc=netloc).geturl()


def store_env(url: str) -> dict[str, str]:
    """The eventsourcing settings for a store URL."""
    scheme = urlsplit(url).scheme
    if scheme == "memory":
        return {"PERSISTENCE_MODULE": "eventsourcing.popo"}
    if scheme == "sqlite":
        return _sqlite_env(url)
    if scheme in ("postgresql", "postgres"):
        msg = f"PostgreSQL stores are not supported yet ({redacted(url)}): use sqlite:///path.db"
        raise StoreURLError(msg)
    msg = f"Unknown store URL {redacted(url)!r}: use memory:// or sqlite:///path/to/file.db"
    raise StoreURLError(msg)


def _sqlite_env(url: str) -> dict[str, str]:
    path, _, query = url.removeprefix("sqlite://").partition("?")
    if not path.startswith("/") or path == "/":
        msg = f"SQLite store URL {url!r} names no file: use sqlite:///path/to/file.db"
        raise StoreURLError(msg)
    file = Path(path[1:])  # "/./rel.db" -> "./rel.db", "//abs.db" -> "/abs.db"
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        msg = f"Cannot create the folder of the SQLite store {url}: {error.strerror}"
        raise StoreUnavailableError(msg) from None
    options = dict(parse_qsl(query))
    return {
        "PERSISTENCE_MODULE": "persistence.sqlite",
        "SQLITE_DBNAME": str(file),
        "SQLITE_LOCK_TIMEOUT": options.get("timeout", "5"),
        "SQLITE_SYNCHRONOUS": options.get("synchronous", "normal"),
    }
