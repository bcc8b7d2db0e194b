"""A period's evidence (`holdpoint export --since --until --graph`), and checking its folder.

The threads are recorded at moments the test chooses: `domain.record.thread`'s
clock is replaced (as in tests/projections/test_oversight_report.py), so the
period selects a known set. The period is March 3 to March 8, 2025, the end
excluded; a thread is selected if any of its events falls in it.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypedDict

import pytest

from domain.record.store import open_store
from domain.types import Command, interrupt
from integrity.export import verify_bundle_file
from integrity.period_export import (
    MANIFEST,
    ExportSetupError,
    Period,
    export_period,
    verify_export,
)
from integrity.sealing import make_seal
from integrity.signing import generate_key, load_private_key, public_hex
from tests.cli_process import holdpoint_keyed as holdpoint
from tests.clock import Clock, set_clock
from tests.graphs import linear_graph

SINCE, UNTIL = datetime(2025, 3, 3, tzinfo=UTC), datetime(2025, 3, 8, tzinfo=UTC)


def at(day: int, hour: int = 12) -> datetime:
    return datetime(2025, 3, day, hour, tzinfo=UTC)


class Item(TypedDict):
    item: str
    answer: bool


def review(state: Item) -> dict[str, Any]:
    return {"answer": interrupt({"approve": state["item"]})}


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    """Events are stamped with `clock.now`."""
    return set_clock(monkeypatch, at(1))


# (graph, thread, when it was raised, when it was decided or None)
HISTORY = [
    ("refunds", "before", at(1), at(2)),  # all before the period
    ("refunds", "into", at(2), at(4)),  # begun before, decided inside: selected
    ("refunds", "inside", at(5), None),  # open, raised inside
    ("payouts", "at-since", SINCE, None),  # exactly at --since: included
    ("payouts", "at-until", UNTIL, at(9)),  # exactly at --until: excluded
    ("payouts", "across", at(1), at(10)),  # begun before, decided after: nothing inside
]
IN_PERIOD = {"into", "inside", "at-since"}


def record_history(url: str, clock: Clock) -> None:
    with open_store(url) as store:
        graphs = {name: linear_graph(store, Item, review, name=name) for name in GRAPHS}
        for graph, thread, raised, decided in HISTORY:
            config = {"configurable": {"thread_id": thread}}
            clock.now = raised
            graphs[graph].invoke({"item": thread, "answer": False}, config)
            if decided is not None:
                clock.now = decided
                graphs[graph].invoke(Command(resume=True), config)


GRAPHS = ("refunds", "payouts")


@pytest.fixture
def key_path(tmp_path: Path) -> Path:
    generate_key(tmp_path / "seal.key")
    return tmp_path / "seal.key"


@pytest.fixture
def history(database_url: str, clock: Clock, key_path: Path) -> str:
    """The store's URL: the history recorded, then sealed."""
    record_history(database_url, clock)
    with open_store(database_url) as store:
        _, _, problems = make_seal(store, load_private_key(str(key_path)), jobs=1)
    assert problems == []
    return database_url


def export(url: str, folder: Path, key_path: Path | None, **period: Any) -> dict[str, Any]:
    key = None if key_path is None else load_private_key(str(key_path))
    with open_store(url) as store:
        done, problems = export_period(store, Period(**period), folder, key=key, jobs=1)
    assert problems == []
    assert done is not None
    return done.manifest


def listed(manifest: dict[str, Any]) -> set[str]:
    return {entry["thread_id"] for entry in manifest["threads"]}


# -- what a period selects ---------------------------------------------------------


def test_a_period_selects_exactly_the_threads_with_an_event_recorded_in_it(
    history, key_path, tmp_path
):
    # When
    manifest = export(history, tmp_path / "march", key_path, since=SINCE, until=UNTIL)

    # Then: one bundle per thread selected, each proven against the seal, its head signed
    assert listed(manifest) == IN_PERIOD
    trusted = public_hex(load_private_key(str(key_path)))
    for entry in manifest["threads"]:
        verdict = verify_bundle_file(str(tmp_path / "march" / entry["file"]), trusted)
        assert (verdict.ok, verdict.covered, verdict.complete) == (True, True, "signed head")
        assert verdict.thread_id == entry["thread_id"]
        assert verdict.events == entry["events"]
    assert manifest["period"]["since"] == SINCE.isoformat()
    assert manifest["period"]["until"] == UNTIL.isoformat()
    assert sorted(path.name for path in (tmp_path / "march").iterdir()) == sorted(
        [MANIFEST, *(entry["file"] for entry in manifest["threads"])]
    )


def test_a_graph_and_a_period_select_the_graph_s_threads_in_it(history, key_path, tmp_path):
    # When
    payouts = export(
        history, tmp_path / "p", key_path, since=SINCE, until=UNTIL, graph_id="payouts"
    )
    every_payout = export(history, tmp_path / "all", key_path, graph_id="payouts")

    # Then
    assert listed(payouts) == {"at-since"}
    assert listed(every_payout) == {"at-since", "at-until", "across"}
    assert {entry["graph_id"] for entry in every_payout["threads"]} == {"payouts"}


def test_a_period_with_no_thread_writes_a_signed_manifest_that_lists_none(
    history, key_path, tmp_path
):
    # When
    manifest = export(history, tmp_path / "feb", key_path, until=at(1, 0))

    # Then
    assert manifest["threads"] == []
    verdict = verify_export(str(tmp_path / "feb"), None, require_complete=True)
    assert (verdict.ok, verdict.signed_by) == (True, manifest["key_id"])


def test_an_unknown_graph_and_no_seal_are_refused_writing_nothing(
    database_url, clock, key_path, tmp_path
):
    # Given: no seal yet
    record_history(database_url, clock)
    folder = tmp_path / "out"

    # Then
    with open_store(database_url) as store, pytest.raises(ExportSetupError, match="no seal"):
        export_period(store, Period(since=SINCE), folder)
    with open_store(database_url) as store:
        make_seal(store, load_private_key(str(key_path)), jobs=1)
        with pytest.raises(ExportSetupError, match=r"no thread .* graph 'wires'"):
            export_period(store, Period(graph_id="wires"), folder)
    assert not folder.exists()


# -- checking the folder -------------------------------------------------------------


@pytest.fixture
def exported(history, key_path, tmp_path) -> tuple[Path, dict[str, Any], str]:
    folder = tmp_path / "march"
    manifest = export(history, folder, key_path, since=SINCE, until=UNTIL)
    return folder, manifest, public_hex(load_private_key(str(key_path)))


def test_an_exported_folder_verifies_with_the_public_key_and_no_database(exported):
    # Given
    folder, manifest, trusted = exported

    # When
    verdict = verify_export(str(folder), trusted, require_complete=True)

    # Then
    assert verdict.failures == []
    assert verdict.signed_by == manifest["key_id"]


def test_one_changed_byte_in_one_bundle_fails_naming_that_file(exported):
    # Given: one digit of one stored event, in the file's text
    folder, manifest, trusted = exported
    name = manifest["threads"][1]["file"]
    text = (folder / name).read_text()
    at_ = text.index("2025-03-")
    (folder / name).write_text(text[: at_ + 9] + "7" + text[at_ + 10 :])

    # When
    verdict = verify_export(str(folder), trusted)

    # Then
    assert verdict.ok is False
    assert verdict.failures == [
        f"{name}: its SHA-256 is not the one the manifest lists: the file was changed"
    ]


def test_a_bundle_dropped_with_its_manifest_entry_breaks_the_signature(exported):
    # Given: one thread removed from the folder and from the manifest, digests intact
    folder, manifest, trusted = exported
    dropped = manifest["threads"].pop(0)
    (folder / dropped["file"]).unlink()
    (folder / MANIFEST).write_text(json.dumps(manifest))

    # When
    verdict = verify_export(str(folder), trusted)

    # Then
    assert verdict.ok is False
    assert verdict.failures[0].startswith(f"{MANIFEST}: the signature does not verify")


def test_a_missing_bundle_and_an_unlisted_file_fail(exported):
    # Given
    folder, manifest, trusted = exported
    gone = manifest["threads"][0]["file"]
    (folder / gone).rename(folder / "extra.json")

    # When
    verdict = verify_export(str(folder), trusted)

    # Then
    assert verdict.failures == [
        f"{gone}: listed in the manifest, but cannot be read: No such file or directory",
        "extra.json: in the folder, not in the manifest",
    ]


def test_an_unsigned_export_verifies_but_is_refused_when_completeness_is_required(
    history, tmp_path
):
    # Given: exported without the seal key
    folder = tmp_path / "unsigned"
    manifest = export(history, folder, None, since=SINCE, until=UNTIL)

    # When
    plain = verify_export(str(folder), None)
    required = verify_export(str(folder), None, require_complete=True)

    # Then
    assert "signature" not in manifest
    assert (plain.ok, plain.signed_by) == (True, None)
    assert required.ok is False
    assert required.failures[0].startswith(f"{MANIFEST}: not signed")


def test_a_thread_with_events_after_the_seal_is_refused_until_sealed_again(
    history, key_path, clock, tmp_path
):
    # Given: "inside" decided after the seal, within the period
    with open_store(history) as store:
        clock.now = at(6)
        graph = linear_graph(store, Item, review, name="refunds")
        graph.invoke(Command(resume=True), {"configurable": {"thread_id": "inside"}})
    manifest = export(history, tmp_path / "march", key_path, since=SINCE, until=UNTIL)
    [inside] = [entry["file"] for entry in manifest["threads"] if entry["thread_id"] == "inside"]

    # When
    strict = verify_export(str(tmp_path / "march"), None)
    allowed = verify_export(str(tmp_path / "march"), None, allow_unsealed=True)

    # Then
    assert strict.ok is False
    assert all(
        failure.startswith(f"{inside}: REFUSED: no seal covers") for failure in strict.failures
    )
    assert allowed.ok is True


# -- the commands, run as a user runs them ---------------------------------------------


def test_holdpoint_export_a_period_then_verify_export_passes_and_fails_after_an_edit(
    history, key_path, tmp_path
):
    # Given
    folder = tmp_path / "march"
    period = ("--since", "2025-03-03", "--until", "2025-03-08")

    # When
    done = holdpoint(history, "export", *period, "--out", str(folder), key=key_path)
    checked = holdpoint(
        history, "verify", "--export", str(folder), "--require-complete", key=key_path
    )

    # Then
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Wrote 3 bundles (")
    assert "bundles" in done.stderr  # the progress
    assert (checked.returncode, checked.stdout.splitlines()[-1]) == (0, "OK"), checked.stdout
    manifest = json.loads((folder / MANIFEST).read_text())
    name = manifest["threads"][0]["file"]
    (folder / name).write_bytes(
        (folder / name).read_bytes().replace(b'"version": 2', b'"version": 3', 1)
    )
    failed = holdpoint(history, "verify", "--export", str(folder), "--json", key=key_path)
    assert failed.returncode == 1
    assert json.loads(failed.stdout)["failures"] == [
        f"{name}: its SHA-256 is not the one the manifest lists: the file was changed"
    ]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("--since", "2025-02-30"), "--since '2025-02-30' is not an ISO 8601 date"),
        (("--since", "2025-03-08", "--until", "2025-03-03"), "--since must be before --until"),
        (("--graph", "wires"), "no thread in the store was begun under graph 'wires'"),
        (("t1", "--since", "2025-03-03"), "give a THREAD, or a period and/or a graph"),
    ],
)
def test_holdpoint_export_refuses_a_bad_period_or_graph_writing_nothing(
    history, key_path, tmp_path, args, says
):
    # When
    done = holdpoint(history, "export", *args, "--out", str(tmp_path / "out"), key=key_path)

    # Then
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.splitlines()[-1].startswith(f"holdpoint: error: {says}")
    assert not (tmp_path / "out").exists()


def test_holdpoint_export_refuses_a_folder_that_is_not_empty(history, key_path, tmp_path):
    # Given
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "notes.txt").write_text("mine")

    # When
    done = holdpoint(history, "export", "--since", "2025-03-03", "--out", str(tmp_path / "out"))

    # Then
    assert (done.returncode, done.stdout) == (2, "")
    assert "exists and is not an empty folder" in done.stderr
    assert [path.name for path in (tmp_path / "out").iterdir()] == ["notes.txt"]
