"""Shared fixtures: every store-backed test runs on each store kind.

PostgreSQL tests use the server at HOLDPOINT_TEST_POSTGRES_URL (default: the
one `.ci/postgres.sh` sets up on localhost), each test in a schema of its
own, dropped afterwards. Without a reachable server they are skipped with the
reason, except in CI (CI=true), where they fail: CI must run them.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from domain.record.application import Workflows
from domain.record.store import open_store
from tests.ci import missing
from tests.serving import Serving

STORE_KINDS = ["memory", "sqlite", "postgres"]
POSTGRES_URL = os.environ.get(
    "HOLDPOINT_TEST_POSTGRES_URL",
    "postgresql://holdpoint:holdpoint@127.0.0.1:5432/holdpoint_test",
)
_postgres_problem: list[str | None] = []


def postgres_problem() -> str | None:
    """Why PostgreSQL tests cannot run here, or None when they can (cached)."""
    if not _postgres_problem:
        try:
            psycopg.connect(POSTGRES_URL, connect_timeout=3).close()
        except psycopg.Error as error:
            _postgres_problem.append(
                f"no PostgreSQL at HOLDPOINT_TEST_POSTGRES_URL ({error.__class__.__name__}: "
                f"{str(error).strip().splitlines()[0]}); run `bash .ci/postgres.sh` as root "
                "to install and start one, or point the variable at a server"
            )
        else:
            _postgres_problem.append(None)
    return _postgres_problem[0]


def require_postgres() -> None:
    problem = postgres_problem()
    if problem is None:
        return
    missing("the PostgreSQL tests", problem)


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A PostgreSQL store URL with a schema of its own, dropped afterwards."""
    require_postgres()
    schema = f"test_{uuid.uuid4().hex[:12]}"
    yield f"{POSTGRES_URL}?schema={schema}"
    with psycopg.connect(POSTGRES_URL, autocommit=True) as connection:
        connection.execute(
            sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema))
        )


def store_url(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    if kind == "memory":
        return "memory://"
    if kind == "sqlite":
        return f"sqlite:///{tmp_path / 'holdpoint.db'}"
    if kind == "postgres":
        return str(request.getfixturevalue("postgres_url"))
    raise ValueError(kind)


@pytest.fixture(params=STORE_KINDS)
def store_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def store_url_for(store_kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    return store_url(store_kind, tmp_path, request)


@pytest.fixture
def store(store_url_for: str) -> Iterator[Workflows]:
    with open_store(store_url_for) as opened:
        yield opened


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'holdpoint.db'}"


@pytest.fixture(autouse=True)
def _no_server_left_running() -> Iterator[None]:
    """A `holdpoint serve` a test started and did not stop (it failed first) is killed."""
    yield
    Serving.kill_started()
