"""Tampering with a real SQLite file and a real PostgreSQL table is caught by verify.

The attacker has rights on the database: the append-only triggers are
dropped first, then the events table is edited with raw SQL. Each test
names the thread, version and kind of problem that `holdpoint verify`'s
core must report.
"""

from __future__ import annotations

import json

from domain.integrity.whole_log import ALTERED, FORGED, MISSING, REORDERED, SWAPPED, LogVerdict
from domain.record.store import open_store
from integrity.verify_log import scan_log
from tests.integrity.conftest import EVENTS_PER_THREAD, THREADS


def verify(url: str) -> LogVerdict:
    with open_store(url) as store:
        return scan_log(store, jobs=1).verdict


def kinds_at(verdict: LogVerdict) -> set[tuple[str | None, int | None, str]]:
    return {(p.thread_id, p.version, p.kind) for p in verdict.problems}


def test_an_untouched_store_verifies_with_every_event_counted(recorded):
    # Given
    url, _ = recorded

    # When
    verdict = verify(url)

    # Then
    assert verdict.ok is True
    assert verdict.events == verdict.thread_events == EVENTS_PER_THREAD * len(THREADS)
    assert verdict.threads == len(THREADS)
    assert verdict.problems == []


def test_an_altered_payload_is_reported_at_its_thread_and_version(recorded):
    # Given: the human's answer in t2's InterruptResumed (version 5) flipped in place
    url, tamper = recorded
    tamper.drop_triggers()
    position = tamper.position_of("t2", 5)
    state = dict(json.loads(next(r[4] for r in tamper.rows() if r[0] == position)))
    state["resume"] = False
    tamper.set_state(position, json.dumps(state, separators=(",", ":")).encode())

    # When
    verdict = verify(url)

    # Then
    assert verdict.ok is False
    assert kinds_at(verdict) == {("t2", 5, ALTERED)}
    assert verdict.problems[0].position == position
    assert "does not match its hash" in verdict.problems[0].detail


def test_an_altered_payload_with_its_own_hash_recomputed_is_reported_at_its_version(recorded):
    # Given: t1's version 4 altered, its own event_hash recomputed, the rest untouched
    url, tamper = recorded
    tamper.drop_triggers()
    rows = {r[2]: r for r in tamper.thread_rows("t1")}
    tamper.rehash_from("t1", 4, {"value": {"question": "Approve everything?"}})
    for version in range(5, EVENTS_PER_THREAD + 1):  # put the later events back as they were
        tamper.set_state(rows[version][0], rows[version][4])

    # When
    verdict = verify(url)

    # Then: version 5 no longer links to it
    assert kinds_at(verdict) == {("t1", 4, ALTERED)}
    assert "hash recomputed" in verdict.problems[0].detail


def test_a_deleted_event_is_reported_missing_at_its_thread_and_version(recorded):
    # Given
    url, tamper = recorded
    tamper.drop_triggers()
    position = tamper.position_of("t3", 6)
    tamper.delete(position)

    # When
    verdict = verify(url)

    # Then
    assert ("t3", 6, MISSING) in kinds_at(verdict)
    assert {p.thread_id for p in verdict.problems if p.thread_id} == {"t3"}
    if tamper.kind == "sqlite":  # positions are dense there: the hole is reported too
        assert any(p.kind == MISSING and p.position == position for p in verdict.problems)


def test_two_events_renumbered_into_each_others_places_are_reported_reordered(recorded):
    # Given: t1's versions 6 and 7 swap positions in the log
    url, tamper = recorded
    tamper.drop_triggers()
    tamper.swap_positions(tamper.position_of("t1", 6), tamper.position_of("t1", 7))

    # When
    verdict = verify(url)

    # Then
    assert kinds_at(verdict) == {("t1", 6, REORDERED)}
    assert "reordered" in verdict.problems[0].detail


def test_two_events_that_trade_contents_are_reported_swapped_at_both_versions(recorded):
    # Given: t2's versions 2 and 3 keep their places and trade their stored states
    url, tamper = recorded
    tamper.drop_triggers()
    tamper.swap_states(tamper.position_of("t2", 2), tamper.position_of("t2", 3))

    # When
    verdict = verify(url)

    # Then
    assert kinds_at(verdict) == {("t2", 2, SWAPPED), ("t2", 3, SWAPPED)}


def test_an_event_moved_to_another_thread_is_reported(recorded):
    # Given: t3's version 5 replaced by t1's version 5 (a valid event, of another thread)
    url, tamper = recorded
    tamper.drop_triggers()
    theirs = next(r for r in tamper.thread_rows("t1") if r[2] == 5)
    tamper.set_state(tamper.position_of("t3", 5), theirs[4])

    # When
    verdict = verify(url)

    # Then
    assert ("t3", 5, ALTERED) in kinds_at(verdict)


def test_a_forged_first_event_under_another_threads_id_is_reported_forged(recorded):
    # Given: t2's ThreadStarted rewritten (hash recomputed) to name another thread
    url, tamper = recorded
    tamper.drop_triggers()
    tamper.rehash_from("t2", 1, {"thread_id": "someone-else"})

    # When
    verdict = verify(url)

    # Then
    assert (None, 1, FORGED) in {(None, p.version, p.kind) for p in verdict.problems}
    assert any("someone-else" in p.detail for p in verdict.problems)


def test_verify_alone_cannot_see_a_forged_event_appended_at_a_threads_end(recorded):
    # Given: a forged decision appended to t1, chained and hashed by the published rules
    url, tamper = recorded
    tamper.drop_triggers()
    version, state = tamper.forge(
        "t1",
        "StateEdited",
        {
            "values": {"approved": True},
            "as_node": None,
            "next": None,
            "actor": {"id": "ceo", "role": "admin"},
            "reason": "forged",
        },
    )
    tamper.insert(
        None,
        tamper.thread_rows("t1")[0][1],
        version,
        "domain.thread:WorkflowThread.StateEdited",
        state,
    )

    # When
    verdict = verify(url)

    # Then: a valid link of a valid chain; only a seal made before can catch it (test_seals)
    assert verdict.ok is True
    assert verdict.events == EVENTS_PER_THREAD * len(THREADS) + 1


def test_a_first_event_naming_a_thread_id_that_is_not_text_is_reported_not_a_crash(recorded):
    # Given: t2's ThreadStarted rewritten to name a lone surrogate ("\ud800" in its JSON)
    url, tamper = recorded
    tamper.drop_triggers()
    position = tamper.position_of("t2", 1)
    state = dict(json.loads(next(r[4] for r in tamper.rows() if r[0] == position)))
    state["thread_id"] = "t2\ud800"
    tamper.set_state(position, json.dumps(state, separators=(",", ":")).encode())

    # When
    verdict = verify(url)

    # Then: reported (the check once stopped with a TypeError from the fast hasher)
    assert verdict.ok is False
    assert (1, position, FORGED) in {(p.version, p.position, p.kind) for p in verdict.problems}
