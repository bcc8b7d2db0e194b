"""`holdpoint erase --subject ID` as an operator runs it, on SQLite and PostgreSQL.

Given refunds of two customers, decided, the read models caught up, the log sealed and
a bundle exported; when one customer is erased; then nothing of their plaintext is
left anywhere in the database (a byte search of the SQLite file and its WAL, every
column of every PostgreSQL table of the schema), while the log, the seal and the earlier
bundle still verify, the report's counts are unchanged, the thread reads as erased and
the other customer's is untouched. Under a legal hold the erasure is refused.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from domain.privacy.envelopes import ERASED
from domain.record.store import open_store
from projections.catalog import runner_for
from tests.cli_process import holdpoint
from tests.conftest import store_url
from tests.personal_threads import ALICE, BOB, config, decide, plaintexts, refund_graph, start
from tests.retention_threads import seal_key


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """Alice's refund decided and another waiting, Bob's decided; the read models caught
    up (they hold the plaintext, as a server's would); the seal key in the environment."""
    found = store_url(request.param, tmp_path, request)
    with open_store(found) as store:
        graph = refund_graph(store)
        start(graph, "alice-1", ALICE)
        decide(graph, "alice-1")
        start(graph, "alice-2", ALICE)
        start(graph, "bob-1", BOB)
        decide(graph, "bob-1")
        runner = runner_for(store)
        runner.catch_up()
        runner.close()
    monkeypatch.setenv("HOLDPOINT_SEAL_KEY", str(seal_key(tmp_path)))
    return found


def ok(url: str, *args: str) -> str:
    done = holdpoint(url, *args)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def everything_stored(url: str) -> bytes:
    """Every byte the store's database holds: the SQLite file and its WAL as they are on
    disk; every column of every row of every PostgreSQL table in the store's schema."""
    if url.startswith("sqlite"):
        path = Path(url.removeprefix("sqlite:///"))
        files = [path, path.with_name(path.name + "-wal")]
        return b"".join(f.read_bytes() for f in files if f.exists())
    base, _, schema = url.partition("?schema=")
    found = []
    with psycopg.connect(base) as connection:
        tables = connection.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = %s", (schema,)
        ).fetchall()
        for (table,) in tables:
            query = sql.SQL("SELECT * FROM {}.{}").format(
                sql.Identifier(schema), sql.Identifier(table)
            )
            for row in connection.execute(query):
                found.extend(_as_bytes(value) for value in row)
    assert len(tables) > 20  # the events, the read models, the keys...
    return b"\x00".join(found)


def _as_bytes(value: Any) -> bytes:
    if isinstance(value, bytes | memoryview):
        return bytes(value)
    return str(value).encode()


def found_in(stored: bytes, subject: dict[str, str]) -> list[bytes]:
    return [value for value in plaintexts(subject) if value in stored]


def test_erasure_leaves_no_plaintext_and_the_record_still_verifies(url, tmp_path):
    # Given a seal, a bundle of Alice's decided refund and the report, made before
    ok(url, "seal")
    bundle = tmp_path / "alice-1.json"
    ok(url, "export", "alice-1", "--out", str(bundle))
    report = json.loads(ok(url, "report"))
    assert report["decisions"]["value"] == 2
    # And Alice's plaintext is held, outside the events, by the read models
    assert found_in(everything_stored(url), ALICE)
    # When Alice is erased
    erased = json.loads(ok(url, "erase", "--subject", ALICE["customer_id"], "--json"))
    # Then the report lists each place, holding nothing of her afterwards
    assert erased["clean"] is True
    assert erased["threads"] == ["alice-1", "alice-2"]
    assert erased["key_destroyed"] is True
    places = {place["name"]: place for place in erased["places"]}
    assert all(place["after"] == 0 for place in places.values())
    assert places["holdpoint_threads"]["before"] == 2  # her two threads, with her metadata
    assert places["holdpoint_threads"]["action"] == "rebuilt from the log"
    assert places["holdpoint_subject_keys"]["kind"] == "subject keys"
    # And nothing of her is left anywhere in the database, while Bob's id, which the
    # thread index shows, is still found there
    stored = everything_stored(url)
    assert found_in(stored, ALICE) == []
    assert found_in(stored, BOB) == [BOB["customer_id"].encode()]
    # And the log, the latest seal and the bundle made before still verify
    ok(url, "verify")
    ok(url, "verify", "--seal", "latest")
    ok(url, "verify", "--bundle", str(bundle))
    # And the report counts the same decisions
    again = json.loads(ok(url, "report"))
    assert again["decisions"] == report["decisions"]
    assert again["interrupts_raised"] == report["interrupts_raised"]
    # And her threads read as erased; Bob's as they were
    with open_store(url) as store:
        graph = refund_graph(store)
        alice = graph.get_state(config("alice-1")).values
        assert (alice["email"], alice["name"], alice["outcome"]) == (ERASED, ERASED, ERASED)
        assert graph.get_state(config("bob-1")).values["email"] == BOB["email"]


def test_an_erasure_under_a_legal_hold_is_refused_and_changes_nothing(url):
    # Given one of Alice's threads under a legal hold
    ok(url, "hold", "place", "--scope", "thread:alice-2", "--reason", "litigation 17")
    before = everything_stored(url)
    # When her erasure is asked for
    refused = holdpoint(url, "erase", "--subject", ALICE["customer_id"])
    # Then it is refused, naming the hold and the thread
    assert refused.returncode == 2
    assert "legal hold hold-1 covers thread 'alice-2'" in refused.stderr
    assert "Nothing was erased" in refused.stderr
    # And her values still read, and are still where they were
    with open_store(url) as store:
        graph = refund_graph(store)
        assert graph.get_state(config("alice-1")).values["email"] == ALICE["email"]
    assert found_in(before, ALICE) == found_in(everything_stored(url), ALICE) != []
