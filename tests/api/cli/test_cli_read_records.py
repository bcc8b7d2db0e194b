"""Reads on the command line: `holdpoint report` and `holdpoint export`, run for real on
a store where the demo ran, leave their read on record by the local operator (the OS
user, unauthenticated), once per window; a refused export records none."""

from __future__ import annotations

import getpass

from domain.record.store import open_store
from projections.catalog import runner_for
from projections.read_records import ReadRecords
from tests.cli_process import holdpoint

PERIOD = "since=2026-01-01T00%3A00%3A00%2B00%3A00&until=2030-01-01T00%3A00%3A00%2B00%3A00"


def reads(url):
    with open_store(url) as store:
        runner = runner_for(store)
        runner.catch_up()
        found = ReadRecords(runner.db).reads()
        runner.close()
    return [(r.actor_id, r.actor_role, r.kind, r.target, r.thread_id, r.via) for r in found]


def test_a_report_and_an_export_on_the_command_line_are_on_record(tmp_path):
    url = f"sqlite:///{tmp_path / 'holdpoint.db'}"
    assert holdpoint(url, "demo").returncode == 0
    with open_store(url) as store:
        [thread_id] = {
            store.mapper.to_domain_event(n).thread_id
            for n in store.recorder.select_notifications(start=1, limit=1000)
            if n.topic.endswith("ThreadStarted")
        }
    # When the operator writes the report twice and exports the demo's thread
    for _ in range(2):
        report = holdpoint(url, "report", "--since", "2026-01-01", "--until", "2030-01-01")
        assert report.returncode == 0, report.stderr
    export = holdpoint(url, "export", thread_id, "--out", str(tmp_path / "bundle.json"))
    assert export.returncode == 0, export.stdout + export.stderr
    # And asks for the export of a thread that does not exist (refused)
    holdpoint(url, "export", "no-such-thread", "--out", str(tmp_path / "none.json"))
    # Then the report (once: the same read in one window) and the export are on record
    me = getpass.getuser()
    assert reads(url) == [
        (me, None, "report", f"oversight?{PERIOD}", None, "cli"),
        (me, None, "export", thread_id, thread_id, "cli"),
    ]


def test_a_period_export_and_a_signed_report_are_on_record(tmp_path, monkeypatch):
    # Given a store where the demo ran, sealed with a key in the environment
    url = f"sqlite:///{tmp_path / 'holdpoint.db'}"
    key = tmp_path / "seal.pem"
    assert holdpoint(url, "seal", "--init-key", str(key)).returncode == 0
    monkeypatch.setenv("HOLDPOINT_SEAL_KEY", str(key))
    assert holdpoint(url, "demo").returncode == 0
    assert holdpoint(url, "seal").returncode == 0
    # When the operator exports a period and writes a signed report
    period = ("--since", "2026-01-01", "--until", "2030-01-01")
    export = holdpoint(url, "export", *period, "--out", str(tmp_path / "period"))
    assert export.returncode == 0, export.stdout + export.stderr
    signed = holdpoint(url, "report", *period, "--sign", "--out", str(tmp_path / "r.json"))
    assert signed.returncode == 0, signed.stderr
    # Then both are on record, as reads by the local operator
    kinds = [(kind, target.split("?")[0]) for _, _, kind, target, _, _ in reads(url)]
    assert kinds == [("export", "period"), ("report", "oversight")]
