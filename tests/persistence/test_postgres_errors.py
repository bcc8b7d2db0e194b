"""PostgreSQL stores that cannot be opened say why, where, and never the password.

A wrong password, a missing database and a closed port each raise
StoreUnavailableError naming the host and the cause; `holdpoint demo` turns
it into one line on stderr and exit status 2. A URL the store cannot
understand raises before anything connects. The passwords used here are
distinctive, with characters that URLs must escape, so that neither their
plain nor their escaped form can turn up by accident.
"""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import sys
import traceback
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, urlsplit

import psycopg
import pytest
from psycopg import sql

from domain.errors import HoldpointError
from domain.record.store import StoreUnavailableError, StoreURLError, open_store

REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Server:
    host: str
    port: int
    dbname: str
    admin_url: str


@dataclass(frozen=True)
class Login:
    user: str
    password: str

    @property
    def secrets(self) -> list[str]:
        """Every form the password could leak in."""
        return [self.password, quote(self.password, safe="")]


@pytest.fixture
def server(postgres_url: str) -> Server:
    parts = urlsplit(postgres_url)
    admin_url = parts._replace(query="").geturl()
    return Server(parts.hostname or "", parts.port or 5432, parts.path.lstrip("/"), admin_url)


@pytest.fixture
def login(server: Server) -> Iterator[Login]:
    """A login role whose password is distinctive and needs escaping in a URL."""
    role = Login(f"holdpoint_test_{uuid.uuid4().hex[:10]}", f"Pw@{secrets.token_hex(8)}:/%?#&")
    with psycopg.connect(server.admin_url, autocommit=True) as admin:
        admin.execute(
            sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(
                sql.Identifier(role.user), sql.Literal(role.password)
            )
        )
    yield role
    with psycopg.connect(server.admin_url, autocommit=True) as admin:
        admin.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role.user)))


def store_url(login: Login, password: str, host: str, port: int, dbname: str, query: str) -> str:
    user = quote(login.user, safe="")
    return f"postgresql://{user}:{quote(password, safe='')}@{host}:{port}/{dbname}{query}"


def closed_port() -> int:
    """A port nothing listens on (one the OS just handed out and took back)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass(frozen=True)
class Case:
    url: str
    host: str
    cause: str
    secrets: list[str]


@pytest.fixture(params=["wrong password", "missing database", "closed port"])
def unavailable(request: pytest.FixtureRequest, server: Server, login: Login) -> Case:
    """A store URL that cannot be opened, with the host and cause it must name."""
    host, port, dbname = server.host, server.port, server.dbname
    password = login.password
    if request.param == "wrong password":
        password = f"Wrong@{secrets.token_hex(8)}:/%"
        cause = f'password authentication failed for user "{login.user}"'
    elif request.param == "missing database":
        dbname = f"holdpoint_missing_{uuid.uuid4().hex[:8]}"
        cause = f'database "{dbname}" does not exist'
    else:
        port = closed_port()
        cause = "Connection refused"
    url = store_url(login, password, host, port, dbname, "?connect_timeout=1")
    leaks = [*login.secrets, password, quote(password, safe="")]
    return Case(url, f"{host}:{port}", cause, leaks)


def holdpoint_demo(store: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "api.cli.main", "demo"],
        cwd=REPO,
        env={**os.environ, "HOLDPOINT_STORE": store},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def assert_no_secret(text: str, leaks: list[str]) -> None:
    for secret in leaks:
        assert secret not in text


def test_an_unavailable_store_names_the_host_and_the_cause_but_not_the_password(unavailable):
    with pytest.raises(StoreUnavailableError) as raised:
        open_store(unavailable.url)

    message = str(raised.value)
    assert unavailable.host in message
    assert unavailable.cause in message
    assert "***" in message  # the URL is shown, its password masked
    assert_no_secret(message, unavailable.secrets)
    assert_no_secret("".join(traceback.format_exception(raised.value)), unavailable.secrets)


def test_holdpoint_demo_on_an_unavailable_store_says_why_in_one_line(unavailable):
    done = holdpoint_demo(unavailable.url)

    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert lines[0].startswith("holdpoint: error: ")
    assert unavailable.host in lines[0]
    assert unavailable.cause in lines[0]
    assert_no_secret(done.stderr + done.stdout, unavailable.secrets)


def test_an_unknown_option_is_refused_before_connecting():
    password = f"Pw@{secrets.token_hex(8)}:/%"
    url = f"postgresql://someone:{quote(password, safe='')}@127.0.0.1:1/db?schema=s&colour=blue"

    with pytest.raises(StoreURLError, match="Unknown option 'colour'") as raised:
        open_store(url)

    assert_no_secret(str(raised.value), [password, quote(password, safe="")])


@pytest.mark.parametrize("option", ["create_tables=maybe", "pool_size=lots"])
def test_a_bad_option_value_is_a_clear_error_not_a_crash(server, login, option):
    url = store_url(login, login.password, server.host, server.port, server.dbname, f"?{option}")

    with pytest.raises(HoldpointError) as raised:
        open_store(url)
    assert option.partition("=")[2] in str(raised.value)
    assert_no_secret(str(raised.value), login.secrets)

    done = holdpoint_demo(url)
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert_no_secret(done.stderr + done.stdout, login.secrets)
