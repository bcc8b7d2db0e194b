"""Evidence bundles: exported from a sealed store, checked with no database at all.

What a bundle proves has two limits the checks must state: an event no valid
seal covers is a hash chain anyone editing the file can recompute (`covered`,
`refusals`), and an inclusion proof never shows that no later event exists
(`complete`: only a head signed at export, or a sealed final event, does).
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest

from domain.integrity.bundle import BundleFormatError, head_statement
from domain.integrity.whole_log import ALTERED, FORGED, MISSING
from domain.record.store import open_store
from domain.types import Command
from integrity.export import export_thread, refusals, verify_bundle_file, write_bundle
from integrity.sealing import make_seal
from integrity.signing import SealKeyError, generate_key, load_private_key, public_hex, sign
from tests.graphs import refund_graph
from tests.integrity.conftest import EVENTS_PER_THREAD


@pytest.fixture
def key(tmp_path: Path):
    generate_key(tmp_path / "seal.key")
    return load_private_key(str(tmp_path / "seal.key"))


@pytest.fixture
def sealed(recorded, key):
    url, tamper = recorded
    with open_store(url) as store:
        document, _, problems = make_seal(store, key, jobs=1)
    assert problems == []
    return url, tamper, document


def export(url: str, thread_id: str, path: Path, key=None) -> Path:
    with open_store(url) as store:
        bundle, problems = export_thread(store, thread_id, jobs=1, key=key)
    assert problems == []
    assert bundle is not None
    write_bundle(bundle, path)
    return path


def edit(path: Path, change) -> Path:
    bundle = json.loads(path.read_text())
    change(bundle)
    path.write_text(json.dumps(bundle))
    return path


def test_an_exported_bundle_verifies_with_no_database(sealed, key, tmp_path):
    # Given: the bundle is written, then the database is gone
    url, tamper, _ = sealed
    path = export(url, "t2", tmp_path / "t2.json")
    if tamper.kind == "sqlite":
        Path(url.removeprefix("sqlite:///")).unlink()

    # When
    verdict = verify_bundle_file(str(path), public_hex(key))

    # Then
    assert verdict.ok is True
    assert verdict.events == verdict.sealed == EVENTS_PER_THREAD
    assert verdict.unsealed_versions == []


def test_a_bundle_holds_the_graph_digest_and_each_decision_with_its_reviewer(sealed, tmp_path):
    # Given
    url, _, document = sealed

    # When
    bundle = json.loads(export(url, "t1", tmp_path / "t1.json").read_text())

    # Then
    assert bundle["thread_id"] == "t1"
    assert bundle["graph_id"]
    assert len(bundle["graph_digest"]) == 64
    [decision] = bundle["decisions"]
    assert decision["version"] == 5
    assert decision["resume"] is True
    assert decision["question"] == {"question": "Approve a $250.0 refund?"}
    assert set(decision["reviewer"]) >= {"id", "role"}
    assert bundle["seal"]["root"] == document["root"]
    assert all(len(event["proof"]) > 0 for event in bundle["events"])


def test_a_bundle_whose_event_was_edited_fails_at_that_version(sealed, tmp_path):
    # Given: the human's answer changed in the stored text of version 5
    url, _, _ = sealed
    path = export(url, "t1", tmp_path / "t1.json")

    def flip(bundle):
        event = bundle["events"][4]
        event["stored"] = event["stored"].replace('"resume":true', '"resume":false')

    # When
    verdict = verify_bundle_file(str(edit(path, flip)), None)

    # Then
    assert verdict.ok is False
    found = {(p.kind, p.version) for p in verdict.problems}
    assert (ALTERED, 5) in found
    assert any("inclusion proof fails" in p.detail for p in verdict.problems)


def test_a_bundle_whose_decisions_summary_was_edited_fails(sealed, tmp_path):
    # Given: the readable summary names another reviewer; the events are untouched
    url, _, _ = sealed
    path = export(url, "t3", tmp_path / "t3.json")

    def rename(bundle):
        bundle["decisions"][0]["reviewer"]["id"] = "someone-senior"

    # When
    verdict = verify_bundle_file(str(edit(path, rename)), None)

    # Then
    assert [(p.kind, p.detail) for p in verdict.problems] == [
        (ALTERED, "the bundle's 'decisions' does not match its events: it was edited")
    ]


def test_a_bundle_with_an_event_removed_fails(sealed, tmp_path):
    # Given
    url, _, _ = sealed
    path = export(url, "t1", tmp_path / "t1.json")

    # When
    verdict = verify_bundle_file(str(edit(path, lambda b: b["events"].pop(3))), None)

    # Then
    assert (MISSING, 4) in {(p.kind, p.version) for p in verdict.problems}


def test_a_bundle_whose_seal_was_edited_fails_its_signature(sealed, tmp_path):
    # Given
    url, _, _ = sealed
    path = export(url, "t1", tmp_path / "t1.json")

    # When
    verdict = verify_bundle_file(str(edit(path, lambda b: b["seal"].update(events=1))), None)

    # Then
    assert verdict.ok is False
    assert "does not verify" in (verdict.signature_problem or "")


def test_a_bundle_checked_against_another_trusted_key_fails(sealed, tmp_path):
    # Given
    url, _, _ = sealed
    path = export(url, "t1", tmp_path / "t1.json")
    generate_key(tmp_path / "other.key")
    other = public_hex(load_private_key(str(tmp_path / "other.key")))

    # When
    verdict = verify_bundle_file(str(path), other)

    # Then
    assert "not by the trusted key" in (verdict.signature_problem or "")


def test_an_event_claiming_a_sealed_position_without_a_proof_is_forged(sealed, tmp_path):
    # Given: the proof of version 9 removed
    url, _, _ = sealed
    path = export(url, "t1", tmp_path / "t1.json")

    def drop(bundle):
        bundle["events"][8]["proof"] = None

    # When
    verdict = verify_bundle_file(str(edit(path, drop)), None)

    # Then
    assert [(p.kind, p.version) for p in verdict.problems] == [(FORGED, 9)]


def test_events_recorded_after_the_seal_are_exported_and_reported_not_sealed(sealed, tmp_path):
    # Given: t1 continues after the seal
    url, _, _ = sealed
    with open_store(url) as store:
        refund_graph(store).invoke(
            {"refund_amount": 500.0, "approved": False}, {"configurable": {"thread_id": "t1"}}
        )
    path = export(url, "t1", tmp_path / "t1.json")

    # When
    verdict = verify_bundle_file(str(path), None)

    # Then: nothing in it is wrong, but the new events are not proven: it is refused
    # unless partial bundles are allowed, with what to do
    assert verdict.ok is True
    assert verdict.sealed == EVENTS_PER_THREAD
    assert verdict.unsealed_versions == list(range(EVENTS_PER_THREAD + 1, verdict.events + 1))
    assert verdict.covered is False
    [reason] = refusals(verdict, allow_unsealed=False, require_complete=False)
    assert reason.startswith(f"no seal covers versions {EVENTS_PER_THREAD + 1}-{verdict.events}")
    assert "run `holdpoint seal`, then export again" in reason
    assert refusals(verdict, allow_unsealed=True, require_complete=False) == []


def test_a_store_that_no_longer_matches_its_seal_exports_nothing(sealed):
    # Given
    url, tamper, _ = sealed
    tamper.drop_triggers()
    tamper.rehash_from("t2", 3, {"duration_ms": 9.0})

    # When
    with open_store(url) as store:
        bundle, problems = export_thread(store, "t1", jobs=1)

    # Then
    assert bundle is None
    assert {p.thread_id for p in problems} == {"t2"}


def test_a_file_that_is_not_a_bundle_is_a_format_error(tmp_path):
    # Given
    path = tmp_path / "x.json"
    path.write_text('{"format": "something else"}')

    # Then
    with pytest.raises(BundleFormatError, match="not a Holdpoint evidence bundle"):
        verify_bundle_file(str(path), None)


def test_a_thread_exported_before_any_seal_verifies_as_a_chain_only(database_url, tmp_path):
    # Given
    with open_store(database_url) as store:
        graph = refund_graph(store)
        config = {"configurable": {"thread_id": "solo"}}
        graph.invoke({"refund_amount": 250.0, "approved": False}, config)
        graph.invoke(Command(resume=False), config)
    path = export(database_url, "solo", tmp_path / "solo.json")

    # When
    verdict = verify_bundle_file(str(path), None)

    # Then
    assert verdict.ok is True
    assert verdict.seal is None
    assert verdict.unsealed_versions == list(range(1, verdict.events + 1))
    assert (verdict.covered, verdict.complete) == (False, None)
    [reason] = refusals(verdict, allow_unsealed=False, require_complete=False)
    assert reason.startswith("the bundle holds no seal: its events are checked as a hash chain")


def test_a_sealed_bundle_with_its_head_signed_at_export_is_complete_as_exported(
    sealed, key, tmp_path
):
    # Given
    url, _, _ = sealed
    path = export(url, "t1", tmp_path / "t1.json", key)

    # When
    verdict = verify_bundle_file(str(path), public_hex(key))

    # Then
    assert (verdict.ok, verdict.covered, verdict.complete) == (True, True, "signed head")
    assert (verdict.last_version, verdict.last_event) == (EVENTS_PER_THREAD, "StateEdited")
    assert refusals(verdict, allow_unsealed=False, require_complete=True) == []


def test_a_bundle_with_its_last_event_cut_off_fails_against_its_signed_head(sealed, key, tmp_path):
    # Given: the edit after completion (version 9) cut; the bundle ends with ThreadCompleted
    url, _, _ = sealed
    path = export(url, "t1", tmp_path / "t1.json", key)

    # When
    verdict = verify_bundle_file(str(edit(path, lambda b: b["events"].pop())), public_hex(key))

    # Then
    assert verdict.ok is False
    assert verdict.last_event == "ThreadCompleted"
    assert verdict.complete is None
    [problem] = verdict.problems
    assert (problem.kind, problem.version) == (MISSING, 9)
    assert problem.detail.endswith("the bundle ends at version 8: version 9 was cut from its end")


def test_without_a_signed_head_a_bundle_cut_short_is_not_proven_complete(sealed, tmp_path):
    # Given: exported with no key; its last two events cut, so it ends with a node's output
    url, _, _ = sealed
    path = export(url, "t1", tmp_path / "t1.json")
    whole = verify_bundle_file(str(path), None)

    def cut_two(bundle):
        del bundle["events"][7:]

    # When
    cut = verify_bundle_file(str(edit(path, cut_two)), None)

    # Then: nothing in either is wrong, and neither shows it is the whole thread
    assert (cut.ok, cut.covered, cut.last_version) == (True, True, 7)
    assert whole.complete is cut.complete is None
    assert refusals(cut, allow_unsealed=False, require_complete=False) == []
    [reason] = refusals(cut, allow_unsealed=False, require_complete=True)
    assert reason.startswith("--require-complete: nothing shows that the bundle ends")


def test_thread_completed_is_not_taken_as_the_end_of_a_thread(sealed, tmp_path):
    # Given: cut back to its ThreadCompleted (an edit followed it in the store)
    url, _, _ = sealed
    path = export(url, "t2", tmp_path / "t2.json")

    # When
    verdict = verify_bundle_file(str(edit(path, lambda b: b["events"].pop())), None)

    # Then
    assert verdict.last_event == "ThreadCompleted"
    assert verdict.complete is None


def test_a_bundle_whose_signed_head_was_removed_is_not_proven_complete(sealed, key, tmp_path):
    # Given
    url, _, _ = sealed
    path = export(url, "t1", tmp_path / "t1.json", key)

    def cut(bundle):
        bundle["events"].pop()
        bundle["head"] = None

    # When
    verdict = verify_bundle_file(str(edit(path, cut)), public_hex(key))

    # Then
    assert (verdict.ok, verdict.complete) == (True, None)
    assert refusals(verdict, allow_unsealed=False, require_complete=True) != []


def test_a_head_re_signed_for_a_cut_bundle_with_another_key_is_forged(sealed, key, tmp_path):
    # Given: the last event cut, and a head statement for what is left signed by another key
    url, _, _ = sealed
    path = export(url, "t1", tmp_path / "t1.json", key)
    generate_key(tmp_path / "other.key")
    other = load_private_key(str(tmp_path / "other.key"))

    def forge(bundle):
        bundle["events"].pop()
        rows = [
            (e["position"], bundle["aggregate_id"], e["version"], e["topic"], e["stored"].encode())
            for e in bundle["events"]
        ]
        moment = datetime.fromisoformat(bundle["exported_at"])
        bundle["head"] = sign(head_statement("t1", rows, moment), other)

    # When
    edit(path, forge)
    trusting_the_seal = verify_bundle_file(str(path), None)
    trusting_mine = verify_bundle_file(str(path), public_hex(key))

    # Then
    [problem] = trusting_the_seal.problems
    assert problem.kind == FORGED
    assert f"the seal by {trusting_the_seal.seal.key_id}" in problem.detail
    [problem] = trusting_mine.problems
    assert "not by the trusted key" in problem.detail
    assert trusting_the_seal.complete is trusting_mine.complete is None


def test_a_sealed_bundle_ending_with_thread_cancelled_is_complete(database_url, key, tmp_path):
    # Given: a thread cancelled while it waited for a decision, then sealed
    with open_store(database_url) as store:
        config = {"configurable": {"thread_id": "stopped"}}
        refund_graph(store).invoke({"refund_amount": 900.0, "approved": False}, config)
        store.cancel("stopped", {"id": "rita", "role": "reviewer"}, "duplicate")
        assert make_seal(store, key, jobs=1)[2] == []
    path = export(database_url, "stopped", tmp_path / "stopped.json")

    # When
    verdict = verify_bundle_file(str(path), public_hex(key))

    # Then
    assert (verdict.ok, verdict.last_event, verdict.complete) == (
        True,
        "ThreadCancelled",
        "final event",
    )


def test_a_bundle_whose_events_were_moved_past_the_seal_is_not_covered(sealed, key, tmp_path):
    # Given: versions 5-9 relabelled to positions after the seal's, their proofs dropped
    url, _, document = sealed
    path = export(url, "t1", tmp_path / "t1.json")

    def move(bundle):
        for event in bundle["events"][4:]:
            event.update(position=document["position"] + event["version"], proof=None)

    # When
    verdict = verify_bundle_file(str(edit(path, move)), public_hex(key))

    # Then
    assert (verdict.ok, verdict.covered, verdict.sealed) == (True, False, 4)
    [reason] = refusals(verdict, allow_unsealed=False, require_complete=False)
    assert reason.startswith("no seal covers versions 5-9, at positions after the seal's")


def test_a_bundle_whose_seal_was_removed_is_not_covered(sealed, key, tmp_path):
    # Given
    url, _, _ = sealed
    path = export(url, "t1", tmp_path / "t1.json")

    # When
    verdict = verify_bundle_file(str(edit(path, lambda b: b.update(seal=None))), public_hex(key))

    # Then
    assert (verdict.ok, verdict.covered) == (True, False)
    [reason] = refusals(verdict, allow_unsealed=False, require_complete=False)
    assert reason.startswith("the bundle holds no seal")


def test_exporting_with_a_key_that_did_not_sign_the_latest_seal_is_refused(sealed, tmp_path):
    # Given
    url, _, _ = sealed
    generate_key(tmp_path / "other.key")
    other = load_private_key(str(tmp_path / "other.key"))

    # Then
    with open_store(url) as store, pytest.raises(SealKeyError, match="did not sign the latest"):
        export_thread(store, "t1", jobs=1, key=other)


def test_events_after_the_head_the_exporter_signed_are_reported_added(sealed, key, tmp_path):
    # Given: a head signed at one export, put on a later export that holds one more event
    url, _, _ = sealed
    earlier = json.loads(export(url, "t1", tmp_path / "early.json", key).read_text())
    with open_store(url) as store:
        refund_graph(store).update_state({"configurable": {"thread_id": "t1"}}, {"approved": True})
        assert make_seal(store, key, jobs=1)[2] == []
    path = export(url, "t1", tmp_path / "t1.json")

    def graft(bundle):
        bundle["head"], bundle["exported_at"] = earlier["head"], earlier["exported_at"]

    # When
    verdict = verify_bundle_file(str(edit(path, graft)), public_hex(key))

    # Then
    [problem] = verdict.problems
    assert (problem.kind, problem.version) == (FORGED, EVENTS_PER_THREAD + 1)
    assert problem.detail.endswith("version 10 was added to the bundle since")
    assert verdict.complete is None
