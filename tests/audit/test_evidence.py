"""Evidence bundles: exported from a sealed store, checked with no database at all."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from audit.evidence import export_thread, verify_bundle_file, write_bundle
from audit.seals import make_seal
from audit.signing import generate_key, load_private_key, public_hex
from domain.evidence import BundleFormatError
from domain.integrity import ALTERED, FORGED, MISSING
from domain.store import open_store
from domain.types import Command
from tests.audit.conftest import EVENTS_PER_THREAD
from tests.graphs import refund_graph


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


def export(url: str, thread_id: str, path: Path) -> Path:
    with open_store(url) as store:
        bundle, problems = export_thread(store, thread_id, jobs=1)
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

    # Then
    assert verdict.ok is True
    assert verdict.sealed == EVENTS_PER_THREAD
    assert verdict.unsealed_versions == list(range(EVENTS_PER_THREAD + 1, verdict.events + 1))


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
