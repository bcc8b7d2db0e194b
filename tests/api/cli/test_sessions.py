"""`holdpoint sessions list|revoke`, run for real: a subprocess on a SQLite file whose
sessions a server's session store (opened on the same file) made and then checks."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from domain.access.keyring import Keyring
from domain.record.store import open_store
from service.read_models import side_tables_for
from service.sessions import HANDLE_LENGTH, Identity, SessionStore, session_hash
from tests.cli_process import holdpoint


def ok(store_url: str, *args: str) -> list[str]:
    done = holdpoint(store_url, *args)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def refused(store_url: str, *args: str) -> str:
    """The one-line error of a command that must fail with status 2 and print nothing."""
    done = holdpoint(store_url, *args)
    assert (done.returncode, done.stdout) == (2, ""), done
    [line] = done.stderr.splitlines()
    return line


@pytest.fixture
def server_side(sqlite_url) -> Iterator[tuple[Keyring, SessionStore]]:
    """The keyring and sessions of a server on the file."""
    with open_store(sqlite_url) as store:
        sessions = SessionStore(side_tables_for(store))
        yield Keyring(store), sessions
        sessions.close()


def test_list_shows_live_sessions_with_their_principal_and_never_their_id(sqlite_url, server_side):
    # Given a reviewer signed in twice and an auditor once
    keyring, sessions = server_side
    rita, _ = keyring.create("rita", "reviewer")
    ada, _ = keyring.create("ada", "auditor")
    opened = [sessions.open(rita.key_id), sessions.open(rita.key_id), sessions.open(ada.key_id)]

    # When the operator lists them
    lines = ok(sqlite_url, "sessions", "list")

    # Then each is there with its key and principal, named by a handle, not its id
    assert lines[0].split()[:3] == ["session", "key", "id"]
    rows = [line.split() for line in lines[1:-1]]
    assert sorted((row[1], row[2], row[-1]) for row in rows) == sorted(
        [(rita.key_id, "rita", "live")] * 2 + [(ada.key_id, "ada", "live")]
    )
    assert lines[-1] == "3 sessions"
    assert not any(session.session_id in line for session in opened for line in lines)


def test_revoking_a_session_by_its_handle_ends_it_for_the_server(sqlite_url, server_side):
    keyring, sessions = server_side
    rita, _ = keyring.create("rita", "reviewer")
    ended, kept = sessions.open(rita.key_id), sessions.open(rita.key_id)
    handle = session_hash(ended.session_id)[:HANDLE_LENGTH]

    lines = ok(sqlite_url, "sessions", "revoke", handle)

    assert lines == [f"Revoked session {handle} of key {rita.key_id}."]
    assert sessions.get(ended.session_id) is None
    assert sessions.get(kept.session_id) is not None
    listed = ok(sqlite_url, "sessions", "list", "--all")
    assert [line.split()[-1] for line in listed[1:-1] if line.startswith(handle)] == ["revoked"]


def test_revoking_a_key_s_sessions_ends_them_all(sqlite_url, server_side):
    keyring, sessions = server_side
    rita, _ = keyring.create("rita", "reviewer")
    opened = [sessions.open(rita.key_id), sessions.open(rita.key_id)]

    assert ok(sqlite_url, "sessions", "revoke", "--key", rita.key_id) == [
        f"Revoked 2 sessions of key {rita.key_id}."
    ]
    assert [sessions.get(s.session_id) for s in opened] == [None, None]


def test_a_session_of_a_revoked_key_is_listed_as_such(sqlite_url, server_side):
    keyring, sessions = server_side
    rita, _ = keyring.create("rita", "reviewer")
    sessions.open(rita.key_id)

    ok(sqlite_url, "keys", "revoke", rita.key_id)

    assert ok(sqlite_url, "sessions", "list")[1].split()[-2:] == ["key", "revoked"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["revoke", "0000000000000000"], "No session starts with '0000000000000000'"),
        (["revoke", "not-hex"], "No session 'not-hex'"),
        (["revoke"], "Name one session"),
        (["revoke", "abc", "--key", "0123456789ab"], "Name one session"),
    ],
)
def test_a_revoke_that_names_no_session_is_refused_in_one_line(
    sqlite_url, server_side, args, message
):
    keyring, sessions = server_side
    sessions.open(keyring.create("rita", "reviewer")[0].key_id)

    assert message in refused(sqlite_url, "sessions", *args)


def test_a_session_signed_in_through_a_provider_is_listed_with_its_principal(
    sqlite_url, server_side
):
    # Given a reviewer signed in through an OpenID Connect provider
    _, sessions = server_side
    sessions.open(identity=Identity("olga", "reviewer", "https://login.example.com"))

    # When the operator lists the sessions
    lines = ok(sqlite_url, "sessions", "list")

    # Then it is there, with no key, as that principal
    assert [line.split()[1:3] + line.split()[-1:] for line in lines[1:-1]] == [
        ["(oidc)", "olga", "live"]
    ]
