"""Retention applied to a store with threads of every outcome, on SQLite and PostgreSQL.

Given threads recorded long ago and lately (the thread module's clock set back),
completed, failed, cancelled, waiting at an interrupt and under a legal hold; when
`apply_purge` runs with a policy in force; then exactly the due threads leave the
log, with one `ThreadsPurged` naming them, the log verifies before and after, the
seal made before the purge still computes over the purged log, the read models
forget the threads, and a crash between the record and the deletes is finished by
the next run.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from domain.errors import RetentionPolicyError, RetentionStateError
from domain.integrity.seal import SEAL_REGISTER_ID, Seal
from domain.oversight.policy_records import record_policy
from domain.record.application import Workflows
from domain.record.store import open_store
from domain.record.thread_uuids import thread_uuid
from domain.retention.policy import RetentionPolicy
from domain.retention.purge_ledger import LEDGER_ID, PurgeLedger
from domain.retention.retention import Due, Retention
from domain.types import Command
from integrity.sealing import latest_seal, verify_with_seal
from integrity.signing import load_private_key
from integrity.verify_log import scan_log
from projections.catalog import runner_for
from projections.oversight_report import oversight_report
from service.retention import apply_purge, candidates, floor_in_force, gathered, seal_log
from tests.conftest import store_url
from tests.graphs import linear_graph, refund_graph
from tests.retention_threads import (
    LATELY,
    LONG_AGO,
    NOW,
    OPERATOR,
    REVIEWER,
    Clock,
    Flaky,
    check,
    config,
    fake_clock,
    record_outcomes,
    seal_key,
)


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    return fake_clock(monkeypatch)


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Workflows]:
    with open_store(store_url(request.param, tmp_path, request)) as opened:
        yield opened


@pytest.fixture
def key(tmp_path: Path) -> Any:
    return load_private_key(str(seal_key(tmp_path)))


def statuses(store: Workflows) -> dict[str, str]:
    runner = runner_for(store)
    runner.catch_up()
    return {t.thread_id: t.status for t in candidates(runner.db)}


def set_policy(store: Workflows, scope: str = "all", clock: str = "end", days: int = 365) -> None:
    policy = RetentionPolicy.checked(
        "standard", scope, clock, days, ["completed", "failed", "cancelled"]
    )
    Retention(store).set_policy(policy, OPERATOR, "records schedule 4.2")


def test_retention_purges_exactly_what_is_due_and_the_log_still_verifies(store, clock, key):
    # Given threads of every outcome, long ago and lately, a hold, and a policy of a year
    record_outcomes(store, clock, LONG_AGO, "old")
    record_outcomes(store, clock, LATELY, "new")
    retention = Retention(store)
    retention.place_hold("thread:old-held", OPERATOR, "litigation 2026-17")
    set_policy(store)
    assert scan_log(store).verdict.ok
    runner = runner_for(store)
    # When retention is applied now
    outcome = apply_purge(store, runner, key, OPERATOR, NOW)
    # Then exactly the old completed, failed and cancelled threads are gone
    purged = {"old-completed", "old-failed", "old-cancelled"}
    assert {d.thread.thread_id for d in outcome.plan.due} == purged
    assert [(k.thread.thread_id, why) for k, why in outcome.plan.kept] == [
        ("old-held", "legal hold hold-1")
    ]
    for thread_id in purged:
        assert store.thread(thread_id) is None
        assert list(store.events.get(thread_uuid(thread_id))) == []
    for kept in ("old-waiting", "old-held", "new-completed", "new-failed", "new-cancelled"):
        assert store.thread(kept) is not None
    # And one ThreadsPurged names them, with their heads and events
    (record,) = retention.purges()
    assert {t["thread_id"] for t in record.threads} == purged
    assert all(t["head_hash"] and t["events"] for t in record.threads)
    assert outcome.deleted == sum(len(t["events"]) for t in record.threads)
    # And the log verifies, the purged positions accounted for, not missing
    verdict = scan_log(store).verdict
    assert verdict.ok, verdict.problems
    assert verdict.purged == outcome.deleted
    # And the seal made before the purge still computes over the purged log
    before, after = outcome.seals
    sealed_before = Seal.from_document(seal_at(store, before))
    _, check_before = verify_with_seal(store, sealed_before, None, "the store")
    assert check_before.ok, check_before.problems
    _, check_after = verify_with_seal(store, Seal.from_document(latest_seal(store)), None, "x")
    assert check_after.ok
    assert latest_seal(store)["position"] == after
    # And the read models forgot them
    assert purged.isdisjoint(statuses(store))
    # And the oversight report lists the purge and the hold
    report = oversight_report(runner.db, since=NOW - timedelta(days=1), until=NOW + timedelta(1))
    assert report["purges"]["value"] == 1
    assert report["purges"]["items"][0]["threads"] == 3
    assert [h["hold_id"] for h in report["legal_holds"]["items"]] == ["hold-1"]


def seal_at(store: Workflows, position: int) -> dict[str, Any]:
    seals = [e.seal for e in store.events.get(SEAL_REGISTER_ID) if hasattr(e, "seal")]
    (found,) = [s for s in seals if s["position"] == position]
    return found


def test_nothing_due_records_nothing_and_seals_nothing(store, clock, key):
    record_outcomes(store, clock, LATELY, "new")
    set_policy(store)
    outcome = apply_purge(store, runner_for(store), key, OPERATOR, NOW)
    assert (outcome.plan.due, outcome.operation, outcome.seals) == ([], None, [])
    assert Retention(store).purges() == []
    assert latest_seal(store) is None


def test_the_clock_from_the_start_and_a_graph_scope(store, clock, key):
    # Given a thread started long ago and ended lately, and one of another graph
    clock.now = LONG_AGO
    refunds = refund_graph(store)
    refunds.invoke({"refund_amount": 10.0, "approved": False}, config("slow"))
    clock.now = LATELY
    refunds.invoke(Command(resume=True), config("slow", REVIEWER))
    flaky = linear_graph(store, Flaky, check, name="flaky")
    clock.now = LONG_AGO
    flaky.invoke({"fail": False}, config("other-graph"))
    graph_id = statuses(store) and store.thread("slow").graph_id  # type: ignore[union-attr]
    # When the policy counts from the start, for the refund graph only
    set_policy(store, scope=f"graph:{graph_id}", clock="start")
    outcome = apply_purge(store, runner_for(store), key, OPERATOR, NOW)
    # Then the slow refund is due (started 400 days ago); the other graph is not covered
    assert [d.thread.thread_id for d in outcome.plan.due] == ["slow"]
    assert store.thread("other-graph") is not None


def test_a_crash_between_the_record_and_the_deletes_is_finished_by_the_next_run(
    store, clock, key, monkeypatch
):
    record_outcomes(store, clock, LONG_AGO, "old")
    set_policy(store)
    recorder = store.recorder
    monkeypatch.setattr(
        recorder, "purge", lambda *_: (_ for _ in ()).throw(ConnectionError("killed"))
    )
    with pytest.raises(ConnectionError):
        apply_purge(store, runner_for(store), key, OPERATOR, NOW)
    assert store.thread("old-completed") is not None  # recorded, not yet deleted
    assert scan_log(store).verdict.ok  # a recorded purge not carried out is no problem
    monkeypatch.undo()
    outcome = apply_purge(store, runner_for(store), key, OPERATOR, NOW)
    assert outcome.finished == 1
    assert store.thread("old-completed") is None
    assert scan_log(store).verdict.ok


def test_a_period_under_the_floor_is_refused():
    with pytest.raises(RetentionPolicyError, match="under the floor of 183 days"):
        RetentionPolicy.checked("short", "all", "end", 30, ["completed"])
    with pytest.raises(RetentionPolicyError, match="never purged"):
        RetentionPolicy.checked("bad", "all", "end", 365, ["interrupted"])


def test_a_memory_store_has_nothing_to_purge(key):
    with open_store("memory://") as store, pytest.raises(RetentionStateError, match="memory"):
        apply_purge(store, runner_for(store), key, OPERATOR, NOW)


def test_the_ledger_is_one_aggregate_that_verify_reads_at_once(store, clock, key):
    record_outcomes(store, clock, LONG_AGO, "old")
    set_policy(store)
    apply_purge(store, runner_for(store), key, OPERATOR, NOW)
    kinds = [type(e) for e in store.events.get(LEDGER_ID)]
    assert kinds == [PurgeLedger.Opened, PurgeLedger.ThreadsPurged]


def test_a_floor_raised_since_a_policy_was_adopted_keeps_threads_that_long(store, clock, key):
    # Given old threads and a policy of a year, adopted under the default floor
    record_outcomes(store, clock, LONG_AGO, "old")
    set_policy(store)
    # When the servers' policy on record raises the floor to 500 days
    record_policy(store, {"retention_floor_days": 500}, None)
    # Then nothing 400 days old is due, and nothing is purged
    outcome = apply_purge(store, runner_for(store), key, OPERATOR, NOW)
    assert (outcome.plan.due, outcome.operation) == ([], None)
    assert store.thread("old-completed") is not None
    # And a policy under the raised floor cannot be adopted
    with pytest.raises(RetentionPolicyError, match="under the floor of 500 days"):
        RetentionPolicy.checked(
            "p", "all", "end", 365, ["completed"], floor_days=floor_in_force(store)
        )


def test_a_purge_record_forged_to_hide_deleted_events_is_called_forged(store, clock, key):
    # Given a thread, and a seal over the log
    record_outcomes(store, clock, LATELY, "new")
    head = seal_log(store, key, OPERATOR)
    facts = next(t for t in statuses_facts(store) if t.thread_id == "new-completed")
    threads, _ = gathered(store, [Due(facts, NOW, ("none",))], head)
    # When someone who may append records a purge naming no seal (the thread's events
    # still there: a forger would then delete them by hand)
    Retention(store).record_purge(threads, OPERATOR, head + 1)
    # Then verify calls it forged
    problems = scan_log(store).verdict.problems
    assert [p.kind for p in problems] == ["forged"]
    assert "no seal was recorded there" in problems[0].detail


def test_a_purge_record_listing_positions_past_its_seal_is_called_forged(store, clock, key):
    record_outcomes(store, clock, LATELY, "new")
    facts = next(t for t in statuses_facts(store) if t.thread_id == "new-completed")
    head = seal_log(store, key, OPERATOR)
    record_outcomes(store, clock, LATELY, "later")  # events past the seal
    later = next(t for t in statuses_facts(store) if t.thread_id == "later-completed")
    threads, _ = gathered(store, [Due(facts, NOW, ("x",)), Due(later, NOW, ("x",))], 10**6)
    Retention(store).record_purge(threads, OPERATOR, head)
    problems = scan_log(store).verdict.problems
    assert problems
    assert {p.kind for p in problems} == {"forged"}
    assert all("past the seal" in p.detail for p in problems)


def statuses_facts(store: Workflows) -> list[Any]:
    runner = runner_for(store)
    runner.catch_up()
    return list(candidates(runner.db))
