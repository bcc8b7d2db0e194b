"""Open a store by URL: where a graph's events live.

- `memory://`: in this process only (tests, notebooks).
- `sqlite:///relative/path.db` or `sqlite:////absolute/path.db`: the embedded
  default; the folder is created on demand.
- `postgresql://...`: the production store (see issue 3).

`HOLDPOINT_STORE` holds the URL for the CLI and the server; the default is
`sqlite:///./var/holdpoint.db`. The store configures the `eventsourcing`
library's own persistence modules by environment, so the domain never
imports a database driver.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit

from domain.application import Workflows

DEFAULT_STORE_URL = "sqlite:///./var/holdpoint.db"


class StoreURLError(ValueError):
    """The store URL cannot be understood."""


def store_url_from_env() -> str:
    return os.environ.get("HOLDPOINT_STORE") or DEFAULT_STORE_URL


def open_store(url: str | None = None) -> Workflows:
    """Open the store at `url` (default: `HOLDPOINT_STORE`, then SQLite)."""
    url = url or store_url_from_env()
    return Workflows(env=store_env(url), url=url)


def store_env(url: str) -> dict[str, str]:
    """The eventsourcing settings for a store URL."""
    scheme = urlsplit(url).scheme
    if scheme == "memory":
        return {"PERSISTENCE_MODULE": "eventsourcing.popo"}
    if scheme == "sqlite":
        return _sqlite_env(url)
    msg = (
        f"Unknown store URL {url!r}: use memory://, sqlite:///path/to/file.db "
        "or postgresql://user:password@host:5432/dbname"
    )
    raise StoreURLError(msg)


def _sqlite_env(url: str) -> dict[str, str]:
    path = url.removeprefix("sqlite://")
    if not path.startswith("/") or path == "/":
        msg = f"SQLite store URL {url!r} names no file: use sqlite:///path/to/file.db"
        raise StoreURLError(msg)
    file = Path(path[1:])  # "/./rel.db" -> "./rel.db", "//abs.db" -> "/abs.db"
    file.parent.mkdir(parents=True, exist_ok=True)
    return {
        "PERSISTENCE_MODULE": "eventsourcing.sqlite",
        "SQLITE_DBNAME": str(file),
        "SQLITE_LOCK_TIMEOUT": "5",
    }
