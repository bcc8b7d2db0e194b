"""Open a store by URL: where a graph's events live.

- `memory://`: in this process only (tests, notebooks).
- `sqlite:///relative/path.db` or `sqlite:////absolute/path.db`: the embedded
  default; the folder is created on demand. Options: `?synchronous=full`
  (default `normal`: see `persistence/sqlite.py` for what each survives) and
  `?timeout=SECONDS` (how long a writer waits for the lock, default 5).
- `postgresql://user:password@host:5432/dbname`: the production store.
  Options: `?schema=NAME` (created if missing), `?pool_size=2`,
  `?max_overflow=8`, `?connect_timeout=5` (seconds), `?lock_timeout=10`
  (seconds a commit waits for the events table's lock), `?create_tables=no`
  (for a runtime role that cannot create them: run `holdpoint db init` first).

`HOLDPOINT_STORE` holds the URL for the CLI and the server; the default is
`sqlite:///./var/holdpoint.db`. The store configures the `eventsourcing`
library's own persistence modules by environment, so the domain never
imports a database driver.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from eventsourcing.persistence import PersistenceError

from domain.errors import HoldpointError
from domain.record.application import Workflows

DEFAULT_STORE_URL = "sqlite:///./var/holdpoint.db"


class StoreURLError(HoldpointError, ValueError):
    """The store URL cannot be understood."""


class StoreUnavailableError(HoldpointError):
    """The store cannot be opened: a missing folder, a locked or unreadable file..."""


def store_url_from_env() -> str:
    return os.environ.get("HOLDPOINT_STORE") or DEFAULT_STORE_URL


def open_store(url: str | None = None, *, existing: bool = False) -> Workflows:
    """Open the store at `url` (default: `HOLDPOINT_STORE`, then SQLite).

    `existing`: for commands that read a store, refuse a SQLite file that is not there
    (a misspelt path) instead of creating an empty store.
    """
    url = url or store_url_from_env()
    if existing and urlsplit(url).scheme == "sqlite" and not _sqlite_file(url).is_file():
        msg = (
            f"No store at {_sqlite_file(url)}: nothing to read there (check HOLDPOINT_STORE; "
            "`holdpoint db init` creates a store)"
        )
        raise StoreUnavailableError(msg)
    env = store_env(url)
    try:
        return Workflows(env=env, url=url)
    except (OSError, PersistenceError) as error:
        msg = f"Cannot open the store {redacted(url)}: {error}"
        raise StoreUnavailableError(msg) from None


BACKENDS = {
    "eventsourcing.popo": "memory",
    "persistence.sqlite": "sqlite",
    "persistence.postgres": "postgres",
}
SCHEMES = {"memory": "memory", "sqlite": "sqlite", "postgresql": "postgres", "postgres": "postgres"}


def backend_of(store: Workflows | str) -> str:
    """What kind of store a Workflows, or a store URL, is: "memory", "sqlite" or "postgres"
    ("unknown" for a URL, or persistence module, Holdpoint does not know)."""
    if isinstance(store, str):
        return SCHEMES.get(urlsplit(store).scheme, "unknown")
    return BACKENDS.get(str(store.env.get("PERSISTENCE_MODULE")), "unknown")


def postgres_params(store: Workflows) -> dict[str, Any]:
    """A PostgreSQL store's connection parameters, for a connection of its own (the read
    models', the verifier's)."""
    env = store.env
    return {
        "dbname": env.get("POSTGRES_DBNAME"),
        "host": env.get("POSTGRES_HOST"),
        "port": env.get("POSTGRES_PORT") or "5432",
        "user": env.get("POSTGRES_USER"),
        "password": env.get("POSTGRES_PASSWORD"),
        "connect_timeout": int(env.get("POSTGRES_CONNECT_TIMEOUT") or 5),
    }


def redacted(url: str) -> str:
    """The URL with any password replaced by ***, for messages and logs."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return parts._replace(netloc=netloc).geturl()


# The library's mapper with a fast path for the states most events have (by topic: the
# domain imports no infrastructure).
MAPPER_TOPIC = "persistence.event_mapper:EventMapper"


def store_env(url: str) -> dict[str, str]:
    """The eventsourcing settings for a store URL."""
    scheme = urlsplit(url).scheme
    if scheme == "memory":
        env = {"PERSISTENCE_MODULE": "eventsourcing.popo"}
    elif scheme == "sqlite":
        env = _sqlite_env(url)
    elif scheme in ("postgresql", "postgres"):
        env = _postgres_env(url)
    else:
        msg = (
            f"Unknown store URL {redacted(url)!r}: use memory://, sqlite:///path/to/file.db "
            "or postgresql://user:password@host:5432/dbname"
        )
        raise StoreURLError(msg)
    return {**env, "MAPPER_TOPIC": MAPPER_TOPIC}


def _whole(text: str) -> bool:
    return text.isdigit()


def _yes_no(text: str) -> bool:
    return text.lower() in ("yes", "no", "y", "n", "true", "false", "on", "off", "1", "0")


def _sqlite_synchronous(text: str) -> bool:
    return text.upper() in ("OFF", "NORMAL", "FULL", "EXTRA")


def _identifier(text: str) -> bool:
    return text.isidentifier() and text.isascii() and len(text) <= 63


Option = tuple[str, Callable[[str], bool], str]
_POSTGRES_OPTIONS: dict[
    str, Option
] = {  # URL option: (library setting, check, what a value must be)
    "schema": ("POSTGRES_SCHEMA", _identifier, "a name of letters, digits and _"),
    "pool_size": ("POSTGRES_POOL_SIZE", _whole, "a whole number"),
    "max_overflow": ("POSTGRES_MAX_OVERFLOW", _whole, "a whole number"),
    "connect_timeout": ("POSTGRES_CONNECT_TIMEOUT", _whole, "whole seconds"),
    "lock_timeout": ("POSTGRES_LOCK_TIMEOUT", _whole, "whole seconds"),
    "create_tables": ("CREATE_TABLE", _yes_no, "yes or no"),
}
_SQLITE_OPTIONS: dict[str, Option] = {
    "synchronous": ("SQLITE_SYNCHRONOUS", _sqlite_synchronous, "normal or full"),
    "timeout": ("SQLITE_LOCK_TIMEOUT", _whole, "whole seconds"),
}


def _options(url: str, query: str, known: dict[str, Option]) -> dict[str, str]:
    """The URL's options as library settings; an unknown option or value is an error."""
    settings = {}
    for name, value in parse_qsl(query, keep_blank_values=True):
        if name not in known:
            msg = f"Unknown option {name!r} in {redacted(url)}: use {', '.join(known)}"
            raise StoreURLError(msg)
        setting, check, expected = known[name]
        if not check(value):
            msg = f"Option {name}={value!r} in {redacted(url)} must be {expected}"
            raise StoreURLError(msg)
        settings[setting] = value
    return settings


def _postgres_env(url: str) -> dict[str, str]:
    parts = urlsplit(url)
    database = unquote(parts.path.lstrip("/"))
    if not parts.hostname or not database:
        msg = (
            f"PostgreSQL store URL {redacted(url)!r} needs a host and a database: "
            "postgresql://user:password@host:5432/dbname"
        )
        raise StoreURLError(msg)
    env = {
        "PERSISTENCE_MODULE": "persistence.postgres",
        "POSTGRES_DBNAME": database,
        "POSTGRES_HOST": parts.hostname,
        "POSTGRES_PORT": str(parts.port or 5432),
        "POSTGRES_USER": unquote(parts.username or ""),
        "POSTGRES_PASSWORD": unquote(parts.password or ""),
        "POSTGRES_CONNECT_TIMEOUT": "5",
        "POSTGRES_LOCK_TIMEOUT": "10",
        "POSTGRES_POOL_SIZE": "2",
        "POSTGRES_MAX_OVERFLOW": "8",
        "POSTGRES_PRE_PING": "y",  # a pooled connection the server dropped is replaced
    }
    env.update(_options(url, parts.query, _POSTGRES_OPTIONS))
    return env


def _sqlite_file(url: str) -> Path:
    path = url.removeprefix("sqlite://").partition("?")[0]
    if not path.startswith("/") or path == "/":
        msg = f"SQLite store URL {url!r} names no file: use sqlite:///path/to/file.db"
        raise StoreURLError(msg)
    return Path(path[1:])  # "/./rel.db" -> "./rel.db", "//abs.db" -> "/abs.db"


def _sqlite_env(url: str) -> dict[str, str]:
    file = _sqlite_file(url)
    query = url.partition("?")[2]
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        msg = f"Cannot create the folder of the SQLite store {url}: {error.strerror}"
        raise StoreUnavailableError(msg) from None
    return {
        "PERSISTENCE_MODULE": "persistence.sqlite",
        "SQLITE_DBNAME": str(file),
        "SQLITE_LOCK_TIMEOUT": "5",
        "SQLITE_SYNCHRONOUS": "normal",
        **_options(url, query, _SQLITE_OPTIONS),
    }
