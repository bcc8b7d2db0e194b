"""The oversight report signed (`holdpoint report --sign`) and checked (`verify --report`).

A signed report states where it was computed (`computed_at`: the log position,
the latest seal, the time) and its detached signature (FILE.sig) covers the
whole report: one number changed fails the check.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from domain.record.store import open_store
from integrity.report_signing import ReportSigningError, at_one_position, verify_report
from integrity.sealing import latest_seal, make_seal
from integrity.signing import generate_key, load_private_key
from projections.catalog import runner_for
from projections.oversight_report import oversight_report
from tests.cli_process import holdpoint_keyed as holdpoint
from tests.integrity.conftest import record_threads

SINCE, UNTIL = datetime(2000, 1, 1, tzinfo=UTC), datetime.now(UTC) + timedelta(days=1)


def head(url: str) -> int:
    with open_store(url) as store:
        return int(store.recorder.max_notification_id() or 0)


@pytest.fixture
def key_path(tmp_path: Path) -> Path:
    generate_key(tmp_path / "seal.key")
    return tmp_path / "seal.key"


@pytest.fixture
def sealed(database_url: str, key_path: Path) -> str:
    """Three refund threads, each decided once, then sealed."""
    with open_store(database_url) as store:
        record_threads(store)
        _, _, problems = make_seal(store, load_private_key(str(key_path)), jobs=1)
    assert problems == []
    return database_url


def sign(url: str, out: Path, key: Path) -> dict:
    done = holdpoint(url, "report", "--sign", "--out", str(out), key=key)
    assert done.returncode == 0, done.stderr
    return json.loads(out.read_text())


def test_a_signed_report_verifies_with_the_public_key_and_fails_after_one_number_changes(
    sealed, key_path, tmp_path
):
    # Given
    out = tmp_path / "report.json"
    report = sign(sealed, out, key_path)
    public = str(key_path) + ".pub"

    # When
    checked = holdpoint(sealed, "verify", "--report", str(out), "--public-key", public)
    out.write_text(out.read_text().replace('"value": 3', '"value": 4', 1))
    tampered = holdpoint(sealed, "verify", "--report", str(out), "--public-key", public)

    # Then
    assert report["decisions"]["value"] == 3
    assert (checked.returncode, checked.stdout.splitlines()[-1]) == (0, "OK"), checked.stdout
    assert tampered.returncode == 1
    assert (
        "FAILED: the report is not the one signed: it was changed after it was signed."
        in tampered.stdout.splitlines()
    )


def test_the_report_states_the_log_position_and_the_seal_it_was_computed_at(
    sealed, key_path, tmp_path
):
    # Given: the seal, then one more thread recorded after it
    with open_store(sealed) as store:
        seal = latest_seal(store)
        record_threads(store, ("t4",))
    before = head(sealed)

    # When
    report = sign(sealed, tmp_path / "report.json", key_path)

    # Then (the report's own read is recorded after it was computed)
    block = report["computed_at"]
    assert block["log_position"] == before
    assert seal is not None
    assert (block["seal"]["position"], block["seal"]["root"]) == (seal["position"], seal["root"])
    assert block["seal"]["position"] < block["log_position"]
    assert report["decisions"]["value"] == 4


def test_a_report_whose_read_models_lagged_is_computed_at_the_head_it_states(
    sealed, key_path, tmp_path
):
    # Given: the read models caught up, then two threads recorded they have not applied
    with open_store(sealed) as store:
        runner = runner_for(store)
        runner.catch_up()
        runner.close()
        record_threads(store, ("t4", "t5"))
    before = head(sealed)

    # When
    report = sign(sealed, tmp_path / "report.json", key_path)

    # Then (the report's own read is recorded after it was computed)
    assert report["computed_at"]["log_position"] == before
    assert report["decisions"]["value"] == 5


def test_read_models_moved_by_another_projector_meanwhile_are_computed_again(sealed):
    # Given: while the first report is computed, a thread is recorded and another
    # projector applies it
    with open_store(sealed) as store:
        ours, theirs = runner_for(store), runner_for(store)
        computed = []

        def compute() -> dict:
            if not computed:
                record_threads(store, ("t4",))
                theirs.catch_up()
            computed.append(1)
            return oversight_report(ours.db, since=SINCE, until=UNTIL)

        # When
        report, position = at_one_position(
            ours.catch_up, lambda: [status.position for status in ours.status()], compute
        )
        ours.close()
        theirs.close()

    # Then: computed twice, the second time at the head, with the new thread's decision
    assert len(computed) == 2
    assert position == head(sealed)
    assert report["decisions"]["value"] == 4


def test_read_models_that_never_hold_still_are_a_clear_error():
    # Given: positions that move on every look
    looks = iter(range(100))

    # Then
    with pytest.raises(ReportSigningError, match="moved on while the report was computed"):
        at_one_position(lambda: None, lambda: [next(looks)], dict)


def test_a_report_signed_with_another_key_fails_against_the_trusted_key(sealed, key_path, tmp_path):
    # Given: a report signed with the seal key; an impostor's key is "trusted"
    out = tmp_path / "report.json"
    sign(sealed, out, key_path)
    impostor = generate_key(tmp_path / "other.key")

    # When
    verdict = verify_report(str(out), impostor)

    # Then
    assert verdict.ok is False
    assert verdict.problem is not None
    assert "not by the trusted key" in verdict.problem


@pytest.mark.parametrize(
    ("args", "key", "says"),
    [
        (("--out", "{tmp}/r.json"), False, "no seal key: set HOLDPOINT_SEAL_KEY"),
        (("--format", "csv", "--out", "{tmp}/r.csv"), True, "--sign signs a JSON report"),
        ((), True, "--sign signs a JSON report written to a file: give --out FILE"),
    ],
)
def test_signing_needs_the_seal_key_json_and_a_file(sealed, key_path, tmp_path, args, key, says):
    # When
    given = [arg.format(tmp=tmp_path) for arg in args]
    done = holdpoint(sealed, "report", "--sign", *given, key=key_path if key else None)

    # Then
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.splitlines()[-1].startswith(f"holdpoint: error: {says}")
    assert list(tmp_path.glob("r.*")) == []


def test_signing_needs_a_seal(database_url, key_path, tmp_path):
    # Given: threads, never sealed
    with open_store(database_url) as store:
        record_threads(store)

    # When
    done = holdpoint(
        database_url, "report", "--sign", "--out", str(tmp_path / "r.json"), key=key_path
    )

    # Then
    assert done.returncode == 2
    assert "no seal is recorded in the store yet" in done.stderr
    assert not (tmp_path / "r.json").exists()
