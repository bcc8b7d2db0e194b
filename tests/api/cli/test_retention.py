"""`holdpoint retention|hold|incident` as an operator runs them, on SQLite and PostgreSQL.

Given a store with threads of every outcome from 400 days ago and from last month;
when the operator adopts a policy, holds a thread, lists what is due and applies
it; then the dry run changes nothing, the purge removes exactly what was listed,
and `holdpoint verify` passes and accounts for it. An incident seals, exports
bundles that verify on their own, holds the threads against the next purge, and is
closed with its outcome.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from domain.record.store import open_store
from tests.cli_process import holdpoint
from tests.conftest import store_url
from tests.retention_threads import LATELY, LONG_AGO, Clock, fake_clock, record_outcomes, seal_key


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A store holding old and new threads of every outcome, and the seal key in the
    environment the commands inherit."""
    found = store_url(request.param, tmp_path, request)
    clock: Clock = fake_clock(monkeypatch)
    with open_store(found) as store:
        record_outcomes(store, clock, LONG_AGO, "old")
        record_outcomes(store, clock, LATELY, "new")
    monkeypatch.undo()
    monkeypatch.setenv("HOLDPOINT_SEAL_KEY", str(seal_key(tmp_path)))
    return found


def ok(url: str, *args: str) -> str:
    done = holdpoint(url, *args)
    assert done.returncode == 0, done.stderr
    return done.stdout


def events(url: str) -> int:
    with open_store(url) as store:
        return store.recorder.max_notification_id() or 0


def test_an_operator_purges_what_is_due_and_the_log_still_verifies(url):
    # Given a policy of a year over every thread, and one old thread held
    ok(url, "retention", "set", "standard", "--scope", "all", "--days", "365", "--reason", "4.2")
    held = ok(url, "hold", "place", "--scope", "thread:old-held", "--reason", "litigation 17")
    assert held.strip() == "Placed hold-1 on thread:old-held."
    # When the operator lists what is due
    head = events(url)
    listed = json.loads(ok(url, "retention", "apply", "--dry-run", "--json"))
    # Then the old completed, failed and cancelled threads are due, each with how long ago,
    # the held one is kept with its hold named, and nothing changed
    assert sorted(d["thread_id"] for d in listed["due"]) == [
        "old-cancelled",
        "old-completed",
        "old-failed",
    ]
    assert all(d["days_after_due"] == 35 for d in listed["due"])
    assert [(k["thread_id"], k["kept_because"]) for k in listed["kept"]] == [
        ("old-held", "legal hold hold-1")
    ]
    assert listed["operation"] is None
    assert events(url) == head
    # When it is applied
    applied = ok(url, "retention", "apply")
    # Then those threads are purged as operation 1, sealed before and after
    assert "Purged 3 thread(s):" in applied
    assert "Recorded as purge 1:" in applied
    verified = ok(url, "verify")
    assert "emptied by recorded purges" in verified
    summary = json.loads(ok(url, "retention", "list", "--json"))
    (purge,) = summary["purges"]
    assert sorted(t["thread_id"] for t in purge["threads"]) == [
        "old-cancelled",
        "old-completed",
        "old-failed",
    ]
    missing = holdpoint(url, "verify", "--thread", "old-completed")
    assert missing.returncode == 2
    # And applying again finds nothing more due
    assert "Purged 0 thread(s)." in ok(url, "retention", "apply")


def test_no_purge_without_the_seal_key_and_no_policy_under_the_floor(url, monkeypatch, tmp_path):
    ok(url, "retention", "set", "standard", "--scope", "all", "--days", "365", "--reason", "r")
    monkeypatch.delenv("HOLDPOINT_SEAL_KEY")
    head = events(url)
    refused = holdpoint(url, "retention", "apply")
    assert refused.returncode == 2
    assert "HOLDPOINT_SEAL_KEY" in refused.stderr
    assert events(url) == head
    short = holdpoint(
        url, "retention", "set", "short", "--scope", "all", "--days", "90", "--reason", "r"
    )
    assert short.returncode == 2
    assert "under the floor of 183 days" in short.stderr
    config = tmp_path / "holdpoint.toml"
    config.write_text("[retention]\nfloor_days = 400\n", encoding="utf-8")
    higher = holdpoint(
        url, "retention", "set", "standard", "--scope", "all", "--days", "365", "--reason", "r",
        "--config", str(config),
    )  # fmt: skip
    assert higher.returncode == 2
    assert "under the floor of 400 days" in higher.stderr
    assert events(url) == head


def test_an_incident_freezes_its_threads_evidence_and_holds_them(url, tmp_path):
    # When an incident is opened on an old completed thread
    out = tmp_path / "incident"
    opened = json.loads(
        ok(url, "incident", "open", "--thread", "old-completed", "--reason", "paid twice",
           "--out", str(out), "--json")
    )  # fmt: skip
    # Then its bundle verifies on its own, and the thread is held
    (bundle,) = opened["bundles"]
    assert ok(url, "verify", "--bundle", str(out / bundle["file"]))
    assert opened["holds"] == ["hold-1"]
    # And a policy that lets it go does not purge it
    ok(url, "retention", "set", "standard", "--scope", "all", "--days", "365", "--reason", "r")
    applied = json.loads(ok(url, "retention", "apply", "--json"))
    assert ("old-completed", "legal hold hold-1") in [
        (k["thread_id"], k["kept_because"]) for k in applied["kept"]
    ]
    # When it is closed, the list says how it ended, and a second close is refused
    ok(url, "incident", "close", "incident-1", "--outcome", "refund reversed")
    (listed,) = json.loads(ok(url, "incident", "list", "--json"))
    assert listed["closed"]["outcome"] == "refund reversed"
    again = holdpoint(url, "incident", "close", "incident-1", "--outcome", "x")
    assert again.returncode == 2
    assert "closed already" in again.stderr


def test_an_incident_on_an_unknown_thread_records_nothing(url, tmp_path):
    head = events(url)
    refused = holdpoint(
        url, "incident", "open", "--thread", "nope", "--reason", "r", "--out", str(tmp_path / "x")
    )
    assert refused.returncode == 2
    assert "nope" in refused.stderr
    assert events(url) == head
    assert not (tmp_path / "x").exists()
