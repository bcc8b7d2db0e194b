"""`holdpoint verify`, `seal` and `export`, run for real as subprocesses.

Exit status 0: everything holds; 1: problems, listed; 2: a user error, one
line on stderr, nothing on stdout, nothing changed.
"""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from domain.record.store import open_store
from tests.cli_process import holdpoint_keyed as holdpoint
from tests.conftest import store_url
from tests.graphs import refund_graph
from tests.integrity.conftest import record_threads
from tests.integrity.tamper import Tamper


def refused(url: str, *args: str, key: Path | None = None) -> str:
    done = holdpoint(url, *args, key=key)
    assert (done.returncode, done.stdout) == (2, ""), done
    [line] = done.stderr.splitlines()
    return line


def head(url: str) -> int:
    with open_store(url) as store:
        return int(store.recorder.max_notification_id() or 0)


@pytest.fixture(params=["sqlite", "postgres"])
def database_url(request, tmp_path) -> str:
    return store_url(request.param, tmp_path, request)


@pytest.fixture
def recorded_url(sqlite_url):
    with open_store(sqlite_url) as store:
        record_threads(store)
    return sqlite_url


@pytest.fixture
def key(tmp_path, recorded_url) -> Path:
    path = tmp_path / "seal.key"
    assert holdpoint(recorded_url, "seal", "--init-key", str(path)).returncode == 0
    return path


def test_verify_reports_counts_and_exits_0_on_either_store(database_url):
    # Given
    with open_store(database_url) as store:
        record_threads(store)

    # When
    done = holdpoint(database_url, "verify")

    # Then
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0].startswith("Checked 27 events at positions 1-27: 3 threads")
    assert done.stdout.splitlines()[-1] == "OK"


def test_verify_names_the_thread_version_and_problem_and_exits_1(recorded_url):
    # Given
    with open_store(recorded_url) as store:
        table = store.recorder.events_table_name
    tamper = Tamper(recorded_url, table)
    tamper.drop_triggers()
    tamper.delete(tamper.position_of("t2", 4))
    tamper.close()

    # When
    done = holdpoint(recorded_url, "verify")

    # Then
    assert done.returncode == 1
    assert "  thread 't2', version 4: missing: version 4 is missing: deleted from the store" in (
        done.stdout.splitlines()
    )
    assert done.stdout.splitlines()[-1] == "FAILED"


def test_verify_json_gives_the_verdict_as_data(recorded_url):
    # When
    done = holdpoint(recorded_url, "verify", "--json")

    # Then
    data = json.loads(done.stdout)
    assert (data["ok"], data["events_checked"], data["threads_checked"]) == (True, 27, 3)


def test_verify_of_one_thread_and_of_an_unknown_thread(recorded_url):
    # When
    one = holdpoint(recorded_url, "verify", "t1")
    line = refused(recorded_url, "verify", "no-such-thread")

    # Then
    assert one.returncode == 0
    assert one.stdout.startswith("Checked the 9 events of thread 't1'")
    assert line == "holdpoint: error: Thread 'no-such-thread' does not exist"


def test_init_key_writes_a_private_key_only_its_owner_reads_and_prints_the_public_key(
    recorded_url, tmp_path
):
    # When
    done = holdpoint(recorded_url, "seal", "--init-key", str(tmp_path / "k"))

    # Then
    assert done.returncode == 0
    assert stat.S_IMODE((tmp_path / "k").stat().st_mode) == 0o600
    public = done.stdout.splitlines()[-1]
    assert (tmp_path / "k.pub").read_text().strip() == public
    assert len(public) == 64
    assert "never overwritten" in refused(recorded_url, "seal", "--init-key", str(tmp_path / "k"))


def test_seal_without_a_key_is_refused_and_records_nothing(recorded_url, tmp_path):
    # When
    line = refused(recorded_url, "seal", "--out", str(tmp_path / "seal.json"))

    # Then
    assert "HOLDPOINT_SEAL_KEY" in line
    assert head(recorded_url) == 27
    assert not (tmp_path / "seal.json").exists()


def test_seal_with_an_unreadable_key_file_is_refused(recorded_url, tmp_path):
    # Given
    bad = tmp_path / "bad.key"
    bad.write_text("not a key")

    # Then
    assert "not an unencrypted PEM private key" in refused(recorded_url, "seal", key=bad)
    assert head(recorded_url) == 27


def test_seal_to_a_folder_that_does_not_exist_is_refused_before_anything(recorded_url, key):
    # When
    line = refused(recorded_url, "seal", "--out", "/no/such/folder/seal.json", key=key)

    # Then
    assert "cannot write /no/such/folder/seal.json" in line
    assert head(recorded_url) == 27


def test_a_seal_written_out_verifies_the_log_by_file_and_as_the_latest(recorded_url, key, tmp_path):
    # Given
    sealed = holdpoint(recorded_url, "seal", "--out", str(tmp_path / "seal.json"), key=key)

    # When
    by_file = holdpoint(
        recorded_url,
        "verify",
        "--seal",
        str(tmp_path / "seal.json"),
        "--public-key",
        str(key) + ".pub",
    )
    latest = holdpoint(recorded_url, "verify", "--seal", "latest", key=key)

    # Then
    assert sealed.returncode == 0, sealed.stderr
    assert sealed.stdout.startswith("Sealed positions 1-27: 27 events, root ")
    assert by_file.returncode == 0, by_file.stdout
    assert "Signature: OK." in by_file.stdout
    assert "(trusted by --public-key)" in by_file.stdout
    assert latest.returncode == 0
    assert "(trusted by HOLDPOINT_SEAL_KEY)" in latest.stdout


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "cannot read the seal file"),
        ("{", "is not JSON"),
        ('{"format": "x"}', "not a Holdpoint seal"),
        ('{"format": "holdpoint-seal/1", "position": 3}', "'events' is missing"),
    ],
)
def test_a_bad_seal_file_is_refused(recorded_url, tmp_path, content, message):
    # Given
    path = tmp_path / "seal.json"
    if content is not None:
        path.write_text(content)

    # Then
    assert message in refused(recorded_url, "verify", "--seal", str(path))


def test_export_then_verify_the_bundle_with_no_store_at_all(recorded_url, key, tmp_path):
    # Given
    assert holdpoint(recorded_url, "seal", key=key).returncode == 0
    bundle = tmp_path / "t1.json"

    # When
    exported = holdpoint(recorded_url, "export", "t1", "--out", str(bundle))
    checked = holdpoint("sqlite:////no/such/store.db", "verify", "--bundle", str(bundle))

    # Then: exported with no key, nothing shows its last events were not cut off, and
    # it says so; that alone does not fail it
    assert exported.returncode == 0, exported.stderr
    assert "All 9 events are covered by the seal at position 27." in exported.stdout
    assert "HOLDPOINT_SEAL_KEY is not set: the bundle carries no signed head" in exported.stderr
    assert checked.returncode == 0, checked.stdout
    assert "Inclusion: 9 of 9 events proven in the sealed log." in checked.stdout
    assert (
        "NOT PROVEN COMPLETE: the bundle ends at version 9 (StateEdited); the thread may have "
        "later events"
    ) in checked.stdout


def test_a_tampered_bundle_fails_with_the_version_and_the_reason(recorded_url, key, tmp_path):
    # Given
    assert holdpoint(recorded_url, "seal", key=key).returncode == 0
    bundle = tmp_path / "t1.json"
    holdpoint(recorded_url, "export", "t1", "--out", str(bundle))
    data = json.loads(bundle.read_text())
    data["events"][4]["stored"] = data["events"][4]["stored"].replace("true", "false", 1)
    bundle.write_text(json.dumps(data))

    # When
    done = holdpoint(recorded_url, "verify", "--bundle", str(bundle))

    # Then
    assert done.returncode == 1
    assert (
        "  thread 't1', version 5, position 13: altered: version 5 does not match its hash: "
        "its content was altered"
    ) in done.stdout.splitlines()


def rewrite(path: Path, change) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def test_a_bundle_exported_with_the_seal_key_is_complete_and_fails_once_cut_short(
    recorded_url, key, tmp_path
):
    # Given
    assert holdpoint(recorded_url, "seal", key=key).returncode == 0
    bundle = tmp_path / "t1.json"
    exported = holdpoint(recorded_url, "export", "t1", "--out", str(bundle), key=key)
    whole = holdpoint(recorded_url, "verify", "--bundle", str(bundle), "--require-complete")

    # When: the edit recorded after ThreadCompleted cut off
    rewrite(bundle, lambda data: data["events"].pop())
    cut = holdpoint(recorded_url, "verify", "--bundle", str(bundle))

    # Then
    assert "Its head, version 9, is signed with key " in exported.stdout
    assert whole.returncode == 0, whole.stdout
    assert "Complete as exported: key " in whole.stdout
    assert "signed that the thread's head was version 9 (StateEdited) when" in whole.stdout
    assert cut.returncode == 1
    assert (
        "  thread 't1', version 9: missing: the bundle's signed head: the thread's head was "
        "version 9 when exported, and the bundle ends at version 8: version 9 was cut from its end"
    ) in cut.stdout.splitlines()


def test_require_complete_refuses_a_bundle_with_no_signed_head(recorded_url, key, tmp_path):
    # Given: exported with no key, then cut back to its ThreadCompleted
    assert holdpoint(recorded_url, "seal", key=key).returncode == 0
    bundle = tmp_path / "t1.json"
    holdpoint(recorded_url, "export", "t1", "--out", str(bundle))
    rewrite(bundle, lambda data: data["events"].pop())

    # When
    plain = holdpoint(recorded_url, "verify", "--bundle", str(bundle))
    required = holdpoint(recorded_url, "verify", "--bundle", str(bundle), "--require-complete")

    # Then
    assert plain.returncode == 0, plain.stdout
    assert "NOT PROVEN COMPLETE: the bundle ends at version 8 (ThreadCompleted);" in plain.stdout
    assert required.returncode == 1
    assert required.stdout.splitlines()[-2:] == [
        "REFUSED: --require-complete: nothing shows that the bundle ends where the thread did "
        "when it was exported (see above).",
        "FAILED",
    ]


def _no_seal(data):
    data["seal"] = None


def _moved_past_the_seal(data):
    for event in data["events"][4:]:
        event.update(position=27 + event["version"], proof=None, leaf_index=None)


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (_no_seal, "REFUSED: the bundle holds no seal: its events are checked as a hash chain"),
        (_moved_past_the_seal, "REFUSED: no seal covers versions 5-9, at positions after the"),
    ],
)
def test_a_bundle_not_all_covered_by_a_valid_seal_fails_unless_allowed(
    recorded_url, key, tmp_path, change, reason
):
    # Given
    assert holdpoint(recorded_url, "seal", key=key).returncode == 0
    bundle = tmp_path / "t1.json"
    holdpoint(recorded_url, "export", "t1", "--out", str(bundle))
    rewrite(bundle, change)
    check = ["verify", "--bundle", str(bundle), "--public-key", f"{key}.pub"]

    # When
    strict = holdpoint(recorded_url, *check)
    allowed = holdpoint(recorded_url, *check, "--allow-unsealed")

    # Then
    assert strict.returncode == 1
    assert [line for line in strict.stdout.splitlines() if line.startswith(reason)]
    assert strict.stdout.splitlines()[-1] == "FAILED"
    assert allowed.returncode == 0, allowed.stdout
    assert "NOT SEALED: versions " in allowed.stdout


def test_events_recorded_after_the_seal_fail_the_bundle_until_sealed_and_exported_again(
    recorded_url, key, tmp_path
):
    # Given: t1 edited after the seal
    assert holdpoint(recorded_url, "seal", key=key).returncode == 0
    with open_store(recorded_url) as store:
        refund_graph(store).update_state({"configurable": {"thread_id": "t1"}}, {"approved": True})
    bundle = tmp_path / "t1.json"

    # When
    exported = holdpoint(recorded_url, "export", "t1", "--out", str(bundle))
    before = holdpoint(recorded_url, "verify", "--bundle", str(bundle))
    assert holdpoint(recorded_url, "seal", key=key).returncode == 0
    holdpoint(recorded_url, "export", "t1", "--out", str(bundle))
    after = holdpoint(recorded_url, "verify", "--bundle", str(bundle))

    # Then
    assert "1 of its events were recorded after the latest seal" in exported.stderr
    assert before.returncode == 1
    assert (
        "REFUSED: no seal covers version 10, at positions after the seal's (27): whoever edits "
        "the file can change it unseen. If recorded after the seal, run `holdpoint seal`, then "
        "export again (--allow-unsealed accepts it as it is)."
    ) in before.stdout.splitlines()
    assert after.returncode == 0, after.stdout


def test_export_of_an_unknown_thread_or_to_a_bad_path_writes_nothing(recorded_url, tmp_path):
    # When
    unknown = refused(recorded_url, "export", "nope", "--out", str(tmp_path / "b.json"))
    folder = refused(recorded_url, "export", "t1", "--out", str(tmp_path / "no" / "b.json"))

    # Then
    assert unknown == "holdpoint: error: Thread 'nope' does not exist"
    assert "cannot write" in folder
    assert list(tmp_path.glob("**/b.json")) == []


def test_options_that_do_not_go_together_are_refused(recorded_url, tmp_path):
    assert "give no THREAD" in refused(recorded_url, "verify", "t1", "--bundle", "x.json")
    assert "give no THREAD" in refused(recorded_url, "verify", "t1", "--seal", "latest")
    assert "no seal is recorded" in refused(recorded_url, "verify", "--seal", "latest")
    assert "give it with --seal or --bundle" in refused(
        recorded_url, "verify", "--public-key", "0" * 64
    )
    assert "give them with --bundle" in refused(recorded_url, "verify", "--allow-unsealed")


@pytest.mark.parametrize(
    ("command", "mentions"),
    [
        (
            "verify",
            [
                "--seal FILE",
                "--bundle FILE",
                "--public-key KEY",
                "Exit status 0",
                "--allow-unsealed",
                "--require-complete",
            ],
        ),
        ("seal", ["HOLDPOINT_SEAL_KEY", "--init-key PATH", "AuditSealed"]),
        ("export", ["--out FILE", "inclusion proof", "verify --bundle", "HOLDPOINT_SEAL_KEY"]),
    ],
)
def test_help_describes_each_command(recorded_url, command, mentions):
    done = holdpoint(recorded_url, command, "--help")
    text = " ".join(done.stdout.split())
    assert done.returncode == 0
    for mention in mentions:
        assert mention in text
