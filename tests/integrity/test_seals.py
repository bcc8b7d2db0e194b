"""Seals: a signed Merkle root over the log, and what checking the log against one catches.

Each test tampers with a real SQLite file or PostgreSQL table after a seal
was made, as an attacker with database rights (triggers dropped first), in
a way the hash chains alone cannot see, and checks that the seal does.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from domain.access.actor import local_actor
from domain.integrity.seal import SEAL_REGISTER_ID, Seal
from domain.integrity.whole_log import ALTERED, FORGED, MISSING
from domain.record.store import open_store
from domain.record.thread_uuids import thread_uuid
from integrity.sealing import latest_seal, make_seal, verify_with_seal
from integrity.signing import generate_key, load_private_key, public_hex, signature_problem
from integrity.verify_log import scan_log
from tests.integrity.conftest import EVENTS_PER_THREAD, THREADS, record_threads

STATE_EDITED = "domain.thread:WorkflowThread.StateEdited"


@pytest.fixture
def key(tmp_path: Path):
    path = tmp_path / "seal.key"
    generate_key(path)
    return load_private_key(str(path))


def seal_now(url: str, key) -> Seal:
    with open_store(url) as store:
        document, _, problems = make_seal(store, key, jobs=1)
    assert problems == []
    assert document is not None
    return Seal.from_document(json.loads(json.dumps(document)))  # as read back from a file


def check(url: str, seal: Seal, trusted: str | None = None):
    with open_store(url) as store:
        scan, result = verify_with_seal(store, seal, trusted, "test", jobs=1)
    return scan.verdict, result


def forged_decision(tamper, thread_id: str, at: datetime | None = None) -> tuple[int, bytes]:
    fields = {
        "values": {"approved": True},
        "as_node": None,
        "next": None,
        "actor": {"id": "ceo", "role": "admin"},
        "reason": "approved by phone",
    }
    return tamper.forge(thread_id, "StateEdited", fields, at=at)


def test_a_seal_over_an_untouched_log_verifies_and_is_recorded_in_the_store(recorded, key):
    # Given
    url, _ = recorded

    # When
    seal = seal_now(url, key)
    verdict, result = check(url, seal, public_hex(key))

    # Then
    assert seal.position == seal.events == EVENTS_PER_THREAD * len(THREADS)
    assert signature_problem(seal.document, public_hex(key)) is None
    assert result.ok is True
    assert verdict.ok is True
    assert result.unsealed == 2  # the register's two events, recorded after the seal's position
    with open_store(url) as store:
        assert latest_seal(store) == {k: v for k, v in seal.document.items() if k != "recorded_at"}
        # by the local user who ran it, as `holdpoint seal` is run
        (*_, recorded_seal) = store.events.get(SEAL_REGISTER_ID)
        assert recorded_seal.actor == local_actor()


def test_a_thread_rewritten_with_recomputed_hashes_passes_the_chains_but_not_the_seal(
    recorded, key
):
    # Given: after the seal, t2's answer changed and every later hash of t2 recomputed
    url, tamper = recorded
    seal = seal_now(url, key)
    tamper.drop_triggers()
    tamper.rehash_from("t2", 5, {"resume": False})
    altered = tamper.position_of("t2", 5)

    # When
    verdict, result = check(url, seal)

    # Then: in a small log each event is a chunk of the seal: each changed one is named
    assert verdict.ok is True  # every chain is whole again
    assert {(p.kind, p.thread_id, p.version) for p in result.problems} == {
        (ALTERED, "t2", version) for version in range(5, EVENTS_PER_THREAD + 1)
    }
    assert min(p.position for p in result.problems) == altered


def test_events_of_two_threads_renumbered_into_each_others_places_break_the_seal(recorded, key):
    # Given: t1's and t2's last events trade positions; each thread's order still holds
    url, tamper = recorded
    seal = seal_now(url, key)
    tamper.drop_triggers()
    first, second = tamper.position_of("t1", 9), tamper.position_of("t2", 9)
    tamper.swap_positions(first, second)

    # When
    verdict, result = check(url, seal)

    # Then
    assert verdict.ok is True
    assert {(p.kind, p.position) for p in result.problems} == {(ALTERED, first), (ALTERED, second)}


def test_a_deleted_last_event_is_reported_missing_at_its_sealed_position(recorded, key):
    # Given: t3's last event deleted: its chain, now shorter, is still whole
    url, tamper = recorded
    seal = seal_now(url, key)
    tamper.drop_triggers()
    position = tamper.position_of("t3", EVENTS_PER_THREAD)
    tamper.delete(position)

    # When
    _, result = check(url, seal)

    # Then
    assert (MISSING, position) in {(p.kind, p.position) for p in result.problems}
    assert "deleted" in result.problems[0].detail


def test_a_forged_event_appended_after_the_seal_and_backdated_is_reported_forged(recorded, key):
    # Given: a decision forged onto t1 after the seal, dated a day before it
    url, tamper = recorded
    seal = seal_now(url, key)
    tamper.drop_triggers()
    version, state = forged_decision(tamper, "t1", at=seal.sealed_at - timedelta(days=1))
    position = tamper.insert(None, thread_uuid("t1").hex, version, STATE_EDITED, state)

    # When
    verdict, result = check(url, seal)

    # Then: a valid link of t1's chain, but dated before a seal that does not hold it
    assert verdict.ok is True
    assert [(p.kind, p.thread_id, p.version, p.position) for p in result.problems] == [
        (FORGED, "t1", version, position)
    ]
    assert "backdated" in result.problems[0].detail


def test_a_forged_event_dated_now_and_appended_after_the_seal_is_not_covered_by_it(recorded, key):
    # Given: what a seal cannot prove: an event after its position, dated after it
    url, tamper = recorded
    seal = seal_now(url, key)
    tamper.drop_triggers()
    version, state = forged_decision(tamper, "t1", at=datetime.now(UTC) + timedelta(seconds=1))
    tamper.insert(None, thread_uuid("t1").hex, version, STATE_EDITED, state)

    # When
    _, result = check(url, seal)

    # Then: reported as not covered, not as a problem (see SECURITY.md)
    assert result.ok is True
    assert result.unsealed == 3


def test_a_forged_event_put_at_a_position_the_seal_covers_is_reported_forged(postgres_url, key):
    # Given: PostgreSQL leaves a gap in its ids when an insert rolls back (a lost race);
    # after the seal, the attacker puts a forged t1 event into that gap
    from tests.integrity.tamper import Tamper  # noqa: PLC0415

    with open_store(postgres_url) as store:
        record_threads(store, ("t1", "t2"))
        duplicate = store.recorder.select_events(thread_uuid("t1"), lte=1)
        with pytest.raises(Exception):  # noqa: B017, PT011 - the library's IntegrityError
            store.recorder.insert_events(list(duplicate))
        record_threads(store, ("t3",))
        table = store.recorder.events_table_name
    tamper = Tamper(postgres_url, table)
    try:
        positions = [row[0] for row in tamper.rows()]
        gap = next(p for p in range(1, positions[-1]) if p not in positions)
        seal = seal_now(postgres_url, key)
        tamper.drop_triggers()
        version, state = forged_decision(tamper, "t1")
        tamper.insert(gap, thread_uuid("t1").hex, version, STATE_EDITED, state)

        # When
        verdict, result = check(postgres_url, seal)
    finally:
        tamper.close()

    # Then: t1's chain and order hold (the gap lies after t1's last event)
    assert verdict.ok is True
    assert seal.document["gaps"] == [[gap, gap]]
    assert [(p.kind, p.thread_id, p.version, p.position) for p in result.problems] == [
        (FORGED, "t1", version, gap)
    ]


def test_an_edited_seal_file_fails_its_signature(recorded, key):
    # Given: someone moves the seal's position, to cover less of the log
    url, _ = recorded
    seal = seal_now(url, key)
    edited = Seal.from_document({**seal.document, "position": seal.position - 1})

    # When
    _, result = check(url, edited)

    # Then
    assert result.ok is False
    assert "does not verify" in (result.signature_problem or "")


def test_a_seal_signed_by_another_key_than_the_trusted_one_fails(recorded, key, tmp_path):
    # Given
    url, _ = recorded
    seal = seal_now(url, key)
    generate_key(tmp_path / "other.key")
    other = load_private_key(str(tmp_path / "other.key"))

    # When
    _, result = check(url, seal, trusted=public_hex(other))

    # Then
    assert "not by the trusted key" in (result.signature_problem or "")


def test_sealing_a_log_that_no_longer_matches_the_last_seal_records_nothing(recorded, key):
    # Given: a rewrite with recomputed hashes after the first seal
    url, tamper = recorded
    first = seal_now(url, key)
    tamper.drop_triggers()
    tamper.rehash_from("t3", 2, {"input": {"refund_amount": 1.0, "approved": False}})

    # When
    with open_store(url) as store:
        document, _, problems = make_seal(store, key, jobs=1)
        head = scan_log(store, jobs=1).verdict.head

    # Then
    assert document is None
    assert {(p.kind, p.thread_id) for p in problems} == {(ALTERED, "t3")}
    assert head == first.position + 2  # nothing recorded since the first seal
