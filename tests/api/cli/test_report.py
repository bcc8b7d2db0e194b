"""`holdpoint report`, run for real: a subprocess on a temporary SQLite store
where `holdpoint demo` has run once (one interrupt raised, one approval)."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from domain.oversight.policy_records import record_policy
from domain.record.store import open_store

REPO = Path(__file__).resolve().parents[3]


def holdpoint(store_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOLDPOINT_STORE": store_url}
    return subprocess.run(
        [sys.executable, "-m", "api.cli.main", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture(scope="module")
def store_file(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A store where the demo ran: its read models are not built yet."""
    url = f"sqlite:///{tmp_path_factory.mktemp('report') / 'holdpoint.db'}"
    demo = holdpoint(url, "demo")
    assert demo.returncode == 0, demo.stderr
    return url


def report(store_file: str, *args: str) -> subprocess.CompletedProcess[str]:
    done = holdpoint(store_file, "report", *args)
    assert done.returncode == 0, done.stderr
    return done


def test_json_is_the_default_and_counts_the_demo(store_file):
    figures = json.loads(report(store_file).stdout)

    assert figures["interrupts_raised"]["value"] == 1
    assert figures["decisions"]["value"] == 1
    assert figures["decisions"]["by_kind"]["approve"] == 1
    assert figures["decisions"]["by_reviewer"]["demo-reviewer"]["approve"] == 1
    assert figures["coverage"]["decided"] == 1
    assert figures["coverage"]["accounted_for"] is True
    assert figures["backlog"]["value"] == 0
    assert figures["period"]["graph_id"] is None
    assert figures["period"]["rubber_stamp_seconds"] == 10.0


def test_the_period_defaults_to_the_30_days_before_until(store_file):
    figures = json.loads(report(store_file, "--until", "2025-03-31").stdout)

    assert figures["period"]["since"] == "2025-03-01T00:00:00.000000Z"
    assert figures["period"]["until"] == "2025-03-31T00:00:00.000000Z"
    assert figures["interrupts_raised"]["value"] == 0  # the demo ran later


def test_graph_floor_and_offsets_are_honoured(store_file):
    refund = json.loads(report(store_file, "--graph", "refund", "--floor", "3600").stdout)
    other = json.loads(report(store_file, "--graph", "other").stdout)
    offset = json.loads(
        report(store_file, "--since", "2025-01-01T00:00:00+02:00", "--until", "2025-01-02").stdout
    )

    assert refund["period"]["graph_id"] == "refund"
    assert refund["interrupts_raised"]["value"] == 1
    assert refund["fast_decisions"]["value"] == 1  # the demo decides at once
    assert other["interrupts_raised"]["value"] == 0
    assert offset["period"]["since"] == "2024-12-31T22:00:00.000000Z"


def test_csv_has_one_row_per_figure(store_file):
    rows = list(csv.DictReader(io.StringIO(report(store_file, "--format", "csv").stdout)))

    assert list(rows[0]) == ["section", "key", "value", "how"]
    values = {(r["section"], r["key"]): r["value"] for r in rows}
    assert values["interrupts_raised", "value"] == "1"
    assert values["decisions", "value"] == "1"
    assert values["decisions", "by_reviewer.demo-reviewer.approve"] == "1"
    assert all(r["how"] for r in rows if r["section"] != "period")


def test_html_is_one_self_contained_page(store_file):
    page = report(store_file, "--format", "html").stdout

    assert page.startswith("<!doctype html>")
    assert "<svg" in page
    assert "demo-reviewer" in page
    assert "http" not in page.lower()
    assert "<script" not in page.lower()


@pytest.mark.parametrize("fmt", ["json", "csv", "html"])
def test_out_writes_the_report_to_a_file(store_file, tmp_path, fmt):
    target = tmp_path / f"report.{fmt}"
    done = report(store_file, "--format", fmt, "--out", str(target))

    assert done.stdout == ""
    assert str(target) in done.stderr
    text = target.read_text(encoding="utf-8")
    if fmt == "json":
        assert json.loads(text)["decisions"]["value"] == 1
    elif fmt == "csv":
        assert text.startswith("section,key,value,how\n")
    else:
        assert text.startswith("<!doctype html>")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--since", "yesterday"], "--since 'yesterday' is not an ISO 8601 date"),
        (["--until", "2025-02-30"], "--until '2025-02-30' is not an ISO 8601 date"),
        (["--since", "2025-03-02", "--until", "2025-03-01"], "--since must be before --until"),
        (["--floor", "-1"], "--floor must be >= 0"),
        (["--out", "/no-such-holdpoint-dir/r.json"], "cannot write /no-such-holdpoint-dir/r.json"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(store_file, args, message):
    done = holdpoint(store_file, "report", *args)

    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("holdpoint: error: ")
    assert message in lines[0]
    assert "Traceback" not in done.stderr


def test_the_floor_defaults_to_the_servers_on_record(tmp_path):
    # Given a store whose servers recorded a rubber-stamp floor of 45 s in their policy
    url = f"sqlite:///{tmp_path / 'holdpoint.db'}"
    assert holdpoint(url, "demo").returncode == 0
    with open_store(url) as store:
        record_policy(store, {"rubber_stamp_seconds": 45.0}, None)
    # When the report is written without --floor, then with one
    recorded = json.loads(report(url).stdout)
    given = json.loads(report(url, "--floor", "5").stdout)
    # Then it uses the floor on record, unless told otherwise
    assert recorded["period"]["rubber_stamp_seconds"] == 45.0
    assert given["period"]["rubber_stamp_seconds"] == 5.0
