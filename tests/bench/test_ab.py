"""`python -m bench.ab`: the A/B tool every measured design choice quotes.

Each case's script runs for real, by the working tree, on a fresh SQLite store, at a
small size: a script that no longer runs against the code it measures (a renamed
module, say) fails here rather than in the next optimisation's measurement.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from bench import ab

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(
    ("measure", "size"),
    [
        (ab.measure_loop, 20),
        (ab.measure_saver, 20),
        (ab.measure_projector, 5),
        (ab.measure_verify, 2_000),
    ],
    ids=["loop", "saver", "projector", "verify"],
)
def test_each_script_case_measures_the_working_tree(measure, size):
    # When
    sample = measure(ab.ROOT, "sqlite", size)

    # Then
    assert sample.cycle_ms > 0
    assert sample.cpu_ms == sample.cycle_ms  # one process: its time is the measure


def test_the_refund_case_runs_cycles_on_a_server_of_the_tree():
    # When
    sample = ab.measure(ab.ROOT, "sqlite", 3, [])

    # Then
    assert sample.cycle_ms > 0
    assert sample.cpu_ms > 0  # the server's own CPU, read from /proc


def test_pairs_alternate_and_end_with_the_median_ratio(capsys, monkeypatch):
    # Given: each revision's measure recorded in turn, the after side twice as fast
    monkeypatch.setattr(ab, "worktree", Path)
    measured: list[str] = []

    def measure(args, tree, serve_args):
        measured.append(str(tree))
        return ab.Sample(2.0 if str(tree) == "before" else 1.0, 4.0)

    monkeypatch.setattr(ab, "_measure", measure)

    # When
    code = ab.main(["before", "after", "--case", "loop", "--store", "sqlite", "--pairs", "3"])

    # Then: the revisions take turns, the before side first in odd pairs
    assert code == 0
    assert measured == ["before", "after", "after", "before", "before", "after"]
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in lines] == [
        "pair 1",
        "pair 2",
        "pair 3",
        "median after/before",
    ]
    assert lines[-1] == "median after/before: cycle 0.500 x, server cpu 1.000 x"


def test_a_revision_is_checked_out_once_into_its_own_worktree(tmp_path, monkeypatch):
    # Given
    monkeypatch.setattr(ab, "WORK", tmp_path / "ab")
    head = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"],
        cwd=ab.ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()

    try:
        # When
        first = ab.worktree("HEAD")
        again = ab.worktree(head)

        # Then
        assert first == again == tmp_path / "ab" / head
        assert (first / "bench" / "ab.py").read_bytes() == subprocess.run(
            ["git", "show", "HEAD:bench/ab.py"], cwd=ab.ROOT, check=True, capture_output=True
        ).stdout
    finally:
        subprocess.run(
            ["git", "worktree", "remove", "--force", str(tmp_path / "ab" / head)],
            cwd=ab.ROOT,
            check=False,
            capture_output=True,
        )


def test_the_working_tree_is_its_own_revision():
    assert ab.worktree(".") == ab.ROOT
