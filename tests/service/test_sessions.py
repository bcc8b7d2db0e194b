"""Browser sessions in the store, on each store kind: given sessions opened at a moment,
when the clock moves or a session is revoked, then who is still signed in.

A second `SessionStore` on a store opened again from the same URL stands for another
server process (a memory store is private to its process: those tests skip it).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

import pytest

from domain.access.keyring import Keyring
from domain.errors import KeyRevokedError, UnknownKeyError
from domain.record.application import Workflows
from domain.record.store import open_store
from service.errors import SessionNotFoundError
from service.read_models import side_tables_for
from service.sessions import (
    IDLE_SECONDS,
    LIFETIME_SECONDS,
    MAX_SESSIONS_PER_KEY,
    SESSIONS,
    TOUCH_SECONDS,
    SessionStore,
    csrf_token_for,
    principal_of,
)

START = 1_750_000_000.0


class Clock:
    """Seconds since the epoch, moved by the test."""

    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def sessions(store: Workflows, clock: Clock) -> Iterator[SessionStore]:
    made = SessionStore(side_tables_for(store), clock=clock)
    yield made
    made.close()


@pytest.fixture
def elsewhere(store: Workflows, clock: Clock) -> Iterator[SessionStore]:
    """The sessions as another process on the same store sees them."""
    if store.url.startswith("memory"):
        pytest.skip("a memory store is private to its process")
    with open_store(store.url) as other:
        made = SessionStore(side_tables_for(other), clock=clock)
        yield made
        made.close()


def rows(sessions: SessionStore) -> list[tuple[object, ...]]:
    with sessions.db.transaction(write=False) as cursor:
        cursor.execute(f"SELECT * FROM {sessions.db.table(SESSIONS)}")
        return [tuple(row) for row in cursor.fetchall()]


def last_seen(sessions: SessionStore) -> float:
    [info] = sessions.list(include_ended=True)
    return info.last_seen_at


def test_a_session_is_found_by_its_id_and_the_store_keeps_only_its_hash(sessions):
    # When a session is opened for a key
    opened = sessions.open("0123456789ab")

    # Then its id finds it, with the key's id
    found = sessions.get(opened.session_id)
    assert found is not None
    assert (found.key_id, found.csrf_token) == ("0123456789ab", opened.csrf_token)
    # And the row holds the id's SHA-256, not the id, nor its CSRF token
    [row] = rows(sessions)
    assert row[0] == hashlib.sha256(opened.session_id.encode()).hexdigest()
    assert opened.session_id not in row
    assert opened.csrf_token not in row
    # And neither does its repr, which logs and tracebacks would show
    assert opened.session_id not in repr(opened)


def test_an_unknown_or_absent_id_finds_no_session(sessions):
    sessions.open("0123456789ab")

    assert sessions.get("not-a-session") is None
    assert sessions.get(None) is None
    assert sessions.get("x" * 10_000) is None


def test_a_session_opened_in_one_process_is_found_in_another(sessions, elsewhere):
    opened = sessions.open("0123456789ab")

    found = elsewhere.get(opened.session_id)

    assert found is not None
    assert found.key_id == "0123456789ab"
    # And its forms' CSRF token is the same there, without being stored
    assert found.csrf_token == opened.csrf_token == csrf_token_for(opened.session_id)


def test_a_session_revoked_in_one_process_is_refused_in_the_other(sessions, elsewhere):
    opened = sessions.open("0123456789ab")

    assert elsewhere.revoke(opened.session_id) is True

    assert sessions.get(opened.session_id) is None
    assert elsewhere.revoke(opened.session_id) is False  # once is enough


def test_each_session_has_a_csrf_token_of_its_own(sessions):
    first, second = sessions.open("0123456789ab"), sessions.open("0123456789ab")

    assert first.csrf_token != second.csrf_token
    assert len(first.csrf_token) == 43


def test_a_session_idle_for_the_idle_timeout_ends(sessions, clock):
    # Given a session used once at sign-in
    opened = sessions.open("0123456789ab")

    # When nothing is asked of it for just under the idle timeout, it still works
    clock.advance(IDLE_SECONDS - 1)
    assert sessions.get(opened.session_id) is not None

    # Then idle past it (counted from the last request recorded), it has ended
    clock.advance(IDLE_SECONDS)
    assert sessions.get(opened.session_id) is None


def test_requests_are_recorded_at_most_once_a_minute_and_extend_the_session(sessions, clock):
    opened = sessions.open("0123456789ab")

    # When a request comes within the minute, nothing is written
    clock.advance(TOUCH_SECONDS / 2)
    sessions.get(opened.session_id)
    assert last_seen(sessions) == START

    # When one comes a minute or more later, it is recorded
    clock.advance(TOUCH_SECONDS)
    seen = clock.now
    sessions.get(opened.session_id)
    assert last_seen(sessions) == seen

    # Then the idle timeout counts from it
    clock.now = seen + IDLE_SECONDS - 1
    assert sessions.get(opened.session_id) is not None


def test_a_session_in_use_ends_at_its_absolute_lifetime(sessions, clock):
    # Given a session used every hour
    opened = sessions.open("0123456789ab")
    while clock.now + 3600 < START + LIFETIME_SECONDS:
        clock.advance(3600)
        assert sessions.get(opened.session_id) is not None

    # When its lifetime is over, it ends all the same
    clock.now = START + LIFETIME_SECONDS
    assert sessions.get(opened.session_id) is None


def test_revoking_a_key_s_sessions_leaves_other_keys_signed_in(sessions):
    mine = [sessions.open("aaaaaaaaaaaa"), sessions.open("aaaaaaaaaaaa")]
    theirs = sessions.open("bbbbbbbbbbbb")

    assert sessions.revoke_key("aaaaaaaaaaaa") == 2

    assert [sessions.get(s.session_id) for s in mine] == [None, None]
    assert sessions.get(theirs.session_id) is not None


def test_a_sign_in_beyond_a_key_s_limit_ends_its_least_recently_seen_session(sessions, clock):
    # Given a key with as many live sessions as it may have, the first seen longest ago
    opened = []
    for _ in range(MAX_SESSIONS_PER_KEY):
        opened.append(sessions.open("0123456789ab"))
        clock.advance(1)

    # When it signs in once more
    newest = sessions.open("0123456789ab")

    # Then the oldest session ends, and the others and the new one work
    assert sessions.get(opened[0].session_id) is None
    assert sessions.get(opened[1].session_id) is not None
    assert sessions.get(newest.session_id) is not None
    assert len(sessions.list()) == MAX_SESSIONS_PER_KEY


def test_expired_sessions_are_deleted_at_the_next_sign_in(sessions, clock):
    sessions.open("0123456789ab")
    clock.advance(IDLE_SECONDS + 1)

    sessions.open("0123456789ab")

    assert len(rows(sessions)) == 1


def test_an_operator_revokes_a_session_by_the_handle_list_shows(sessions):
    kept, ended = sessions.open("aaaaaaaaaaaa"), sessions.open("bbbbbbbbbbbb")
    [handle] = [s.handle for s in sessions.list() if s.key_id == "bbbbbbbbbbbb"]

    info = sessions.revoke_handle(handle)

    assert (info.handle, info.key_id, info.revoked_at) == (handle, "bbbbbbbbbbbb", START)
    assert sessions.get(ended.session_id) is None
    assert sessions.get(kept.session_id) is not None
    assert [s.key_id for s in sessions.list()] == ["aaaaaaaaaaaa"]
    assert len(sessions.list(include_ended=True)) == 2


@pytest.mark.parametrize(
    ("handle", "message"), [("f" * 16, "No session starts with"), ("zz", "No session 'zz'")]
)
def test_a_handle_that_names_no_session_is_refused_clearly(sessions, handle, message):
    sessions.open("aaaaaaaaaaaa")
    hashes = {s.handle for s in sessions.list()}
    if handle in hashes:  # pragma: no cover - a one in 2**64 chance
        pytest.skip("the random session's hash starts so")

    with pytest.raises(SessionNotFoundError, match=message):
        sessions.revoke_handle(handle)


def test_a_session_s_key_is_checked_through_the_keyring_every_time(store):
    # Given a session's key, valid
    keyring = Keyring(store)
    info, _ = keyring.create("rita", "reviewer")
    assert principal_of(keyring, info.key_id).id == "rita"

    # When the key is revoked (by any process: here another keyring on the store)
    Keyring(store).revoke(info.key_id)

    # Then the session's principal is refused, saying so
    with pytest.raises(KeyRevokedError, match="was revoked"):
        principal_of(keyring, info.key_id)
    with pytest.raises(UnknownKeyError):
        principal_of(keyring, "ffffffffffff")
