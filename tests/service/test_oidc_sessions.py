"""Sessions signed in through an OpenID Connect provider, and sign-ins in progress, in the
store, on each store kind: what another process sees, what signing out of all of them
ends, and that a sign-in is taken once.

A second `SessionStore` on a store opened again from the same URL stands for another
server process (a memory store is private to its process: those tests skip it).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from domain.record.application import Workflows
from domain.record.store import open_store
from projections.privileges import TablesNotReadyError
from service.read_models import side_tables_for
from service.sessions import SESSIONS, Identity, SessionStore
from service.sign_ins import SIGN_IN_SECONDS, PendingSignIn, SignIns

START = 1_750_000_000.0
ISSUER = "https://login.example.com"
OLGA = Identity("olga", "reviewer", ISSUER)


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> float:
        return self.now


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


def test_a_providers_session_carries_its_principal_role_and_issuer_to_every_process(
    sessions, elsewhere
):
    # When a session is opened for the identity an ID token gave
    opened = sessions.open(identity=OLGA)

    # Then another process finds it, with that identity and no key
    found = elsewhere.get(opened.session_id)
    assert found is not None
    assert (found.identity, found.key_id) == (OLGA, "")
    # And an operator's list shows who it is
    [info] = elsewhere.list()
    assert info.identity == OLGA


def test_ending_all_of_a_principals_sessions_ends_theirs_only(sessions, elsewhere):
    # Given two sessions of olga, one of another principal, one at another provider,
    # and one of an API key
    first, second = sessions.open(identity=OLGA), sessions.open(identity=OLGA)
    rita = sessions.open(identity=Identity("rita", "reviewer", ISSUER))
    other_provider = sessions.open(identity=Identity("olga", "reviewer", "https://other.example"))
    key = sessions.open("0123456789ab")

    # When olga signs out of all her sessions in one process
    assert elsewhere.revoke_all_of(first) == 2

    # Then both of hers are ended, everywhere; the others are not
    assert sessions.get(first.session_id) is None
    assert sessions.get(second.session_id) is None
    for kept in (rita, other_provider, key):
        assert sessions.get(kept.session_id) is not None


def test_ending_all_of_a_keys_sessions_leaves_the_providers_ones(sessions):
    by_key = sessions.open("0123456789ab")
    by_provider = sessions.open(identity=OLGA)

    assert sessions.revoke_all_of(by_key) == 1

    assert sessions.get(by_key.session_id) is None
    assert sessions.get(by_provider.session_id) is not None


def test_a_sign_in_begun_in_one_process_is_taken_once_in_another(sessions, elsewhere):
    # Given a sign-in begun in one process
    SignIns(sessions.db).begin("the-state", PendingSignIn("verifier", "nonce", "/ui/inbox"))

    # When the provider's answer lands on another
    taken = SignIns(elsewhere.db).take("the-state")

    # Then it finds what to check the answer against, once
    assert taken == PendingSignIn("verifier", "nonce", "/ui/inbox")
    assert SignIns(elsewhere.db).take("the-state") is None
    assert SignIns(sessions.db).take("the-state") is None


def test_a_sign_in_in_progress_is_no_session(sessions):
    # Given a sign-in in progress, whose state a browser holds
    SignIns(sessions.db).begin("the-state", PendingSignIn("verifier", "nonce", "/ui/inbox"))

    # Then its state opens nothing, and no operator sees it as a session
    assert sessions.get("the-state") is None
    assert sessions.list(include_ended=True) == []


def test_a_sign_in_expires(sessions, clock):
    SignIns(sessions.db, clock).begin("the-state", PendingSignIn("v", "n", "/ui/inbox"))

    clock.now += SIGN_IN_SECONDS

    assert SignIns(sessions.db, clock).take("the-state") is None


def made_before_the_providers(store: Workflows):
    """The store's database, with a sessions table as made before sign-in with a provider."""
    db = side_tables_for(store)
    table = db.table(SESSIONS)
    with db.transaction() as cursor:
        cursor.execute(f"DROP TABLE IF EXISTS {table}")
        cursor.execute(
            f"CREATE TABLE {table} (session_hash TEXT PRIMARY KEY, key_id TEXT NOT NULL, "
            "created_at DOUBLE PRECISION NOT NULL, last_seen_at DOUBLE PRECISION NOT NULL, "
            "expires_at DOUBLE PRECISION NOT NULL, revoked_at DOUBLE PRECISION)"
        )
    return db


def test_a_server_that_may_not_add_columns_says_to_run_db_init(store):
    # Given a sessions table made before sign-in with a provider
    db = made_before_the_providers(store)

    # When a server that may not create tables opens it, then it stops, saying why
    with pytest.raises(TablesNotReadyError) as raised:
        SessionStore(db, create=False)

    assert str(raised.value) == (
        f"The table {SESSIONS} has no column principal (sign-in with a provider added it): "
        "run `holdpoint db init` as the tables' owner"
    )


def test_a_sessions_table_made_before_the_providers_gets_their_columns(store):
    # Given a store whose sessions table was made before sign-in with a provider
    db = made_before_the_providers(store)

    # When a server opens it
    sessions = SessionStore(db)
    opened = sessions.open(identity=OLGA)

    # Then a provider's session is kept there
    found = sessions.get(opened.session_id)
    assert found is not None
    assert found.identity == OLGA
    sessions.close()
