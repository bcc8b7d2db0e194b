"""`holdpoint keys create|list|revoke`, run for real: a subprocess on a SQLite file,
checked by a keyring that opens the same file, as the server would."""

from __future__ import annotations

from pathlib import Path

import pytest

from domain.access.identity import parse_key
from domain.access.keyring import Keyring
from domain.errors import KeyRevokedError
from domain.record.store import open_store
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


def test_create_prints_the_key_last_and_the_key_authenticates(sqlite_url):
    # When
    lines = ok(sqlite_url, "keys", "create", "--principal", "rita", "--role", "reviewer")

    # Then
    raw = lines[-1]
    assert parse_key(raw) is not None
    key_id = parse_key(raw)[0]
    assert lines[0] == f"Created key {key_id} for rita (role reviewer)."
    with open_store(sqlite_url) as store:
        principal = Keyring(store).authenticate(raw)
    assert (principal.id, principal.role, principal.key_id) == ("rita", "reviewer", key_id)


def test_the_operator_who_ran_create_is_recorded_with_the_note(sqlite_url):
    raw = ok(sqlite_url, "keys", "create", "--principal", "amy", "--role", "agent", "--note", "CI")

    with open_store(sqlite_url) as store:
        [info] = Keyring(store).list()
    assert info.key_id == parse_key(raw[-1])[0]
    assert info.note == "CI"
    assert info.created_by is not None
    assert (info.created_by["authenticated"], info.created_by["via"]) == (False, "local")


def test_list_shows_keys_newest_first_and_revoke_stops_a_key_at_once(sqlite_url):
    # Given two keys, and a server-side keyring that has checked one of them
    rita = ok(sqlite_url, "keys", "create", "--principal", "rita", "--role", "reviewer")[-1]
    amy = ok(sqlite_url, "keys", "create", "--principal", "amy", "--role", "agent")[-1]
    rita_id, amy_id = parse_key(rita)[0], parse_key(amy)[0]
    with open_store(sqlite_url) as store:
        server = Keyring(store)
        server.authenticate(rita)

        # When the CLI revokes it while the "server" runs
        revoked = ok(sqlite_url, "keys", "revoke", rita_id, "--reason", "left the team")

        # Then the server refuses it on the next request
        assert revoked == [f"Revoked key {rita_id} of rita (role reviewer)."]
        with pytest.raises(KeyRevokedError):
            server.authenticate(rita)
        assert server.authenticate(amy).id == "amy"

    listing = ok(sqlite_url, "keys", "list")
    assert listing[0].startswith("key id ")
    assert listing[0].split()[2:] == [
        "principal",
        "role",
        "created",
        "(UTC)",
        "revoked",
        "(UTC)",
        "expires",
        "(UTC)",
    ]
    assert listing[1].split()[:3] == [amy_id, "amy", "agent"]
    assert listing[1].split()[-2:] == ["-", "-"]  # neither revoked nor expiring
    assert listing[2].split()[:3] == [rita_id, "rita", "reviewer"]
    assert listing[2].split()[-1] == "-"
    assert listing[2].split()[-2] != "-"
    assert listing[-1] == "2 keys, 1 active"


def test_a_bad_role_exits_2_with_one_line_and_records_nothing(sqlite_url):
    line = refused(sqlite_url, "keys", "create", "--principal", "rita", "--role", "boss")

    assert line == (
        "holdpoint: error: Unknown role 'boss': use one of agent, reviewer, auditor, admin"
    )
    assert ok(sqlite_url, "keys", "list")[-1] == "0 keys, 0 active"


def test_a_bad_principal_exits_2_with_one_line(sqlite_url):
    line = refused(sqlite_url, "keys", "create", "--principal", "", "--role", "agent")

    assert line == "holdpoint: error: The principal id must not be empty"


def test_revoking_an_unknown_key_or_twice_exits_2_with_one_line(sqlite_url):
    raw = ok(sqlite_url, "keys", "create", "--principal", "rita", "--role", "reviewer")[-1]
    key_id = parse_key(raw)[0]
    ok(sqlite_url, "keys", "revoke", key_id)

    assert refused(sqlite_url, "keys", "revoke", "0123456789ab") == (
        "holdpoint: error: No API key '0123456789ab' exists"
    )
    again = refused(sqlite_url, "keys", "revoke", key_id)
    assert again.startswith(f"holdpoint: error: The API key {key_id} was already revoked at ")
    assert again.endswith("; nothing was recorded")


def test_the_raw_key_is_not_in_the_store_file(sqlite_url):
    raw = ok(sqlite_url, "keys", "create", "--principal", "rita", "--role", "reviewer")[-1]
    secret = parse_key(raw)[1]

    files = Path(sqlite_url.removeprefix("sqlite:///")).parent.glob("holdpoint.db*")
    stored = b"".join(path.read_bytes() for path in files)
    assert b"rita" in stored  # the scan reads the store
    assert secret.encode() not in stored


def test_a_key_made_with_an_expiry_says_so_and_a_past_one_is_refused(sqlite_url):
    made = ok(
        sqlite_url,
        "keys",
        "create",
        "--principal",
        "tess",
        "--role",
        "agent",
        "--expires",
        "2099-06-30",
    )
    assert made[0].endswith("valid until 2099-06-30 00:00:00 UTC.")
    listing = ok(sqlite_url, "keys", "list")
    assert listing[1].split()[-2:] == ["2099-06-30", "00:00:00"]
    assert listing[-1] == "1 keys, 1 active"

    past = refused(
        sqlite_url,
        "keys",
        "create",
        "--principal",
        "tess",
        "--role",
        "agent",
        "--expires",
        "2020-01-01",
    )
    assert past.startswith("holdpoint: error: A key's expiry must be in the future")
    assert ok(sqlite_url, "keys", "list")[-1] == "1 keys, 1 active"
