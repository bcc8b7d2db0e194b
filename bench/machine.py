"""What the report says about the machine, the versions and the run."""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import statistics
import subprocess
import time
from datetime import UTC, datetime
from importlib import metadata
from typing import TYPE_CHECKING

from bench.backends import LANGGRAPH_VENV
from bench.postgres import URL_VARIABLE, configured_url, redacted

if TYPE_CHECKING:
    from pathlib import Path

    from bench.postgres import Server

PACKAGES = (
    "langgraph",
    "langgraph-checkpoint",
    "langgraph-checkpoint-sqlite",
    "langgraph-checkpoint-postgres",
    "langgraph-api",
    "langgraph-runtime-inmem",
    "langgraph-sdk",
    "eventsourcing",
    "psycopg",
    "fastapi",
    "uvicorn",
    "holdpoint",
)


METHOD = (
    "- **Method**: one process, one thread at a time, both sides on the same graph "
    "code (`bench/graphs.py`) except benchmark 5 (concurrent writers); a fresh store "
    "per repetition (a new in-memory saver, a new SQLite file in its own temporary "
    "directory, or fresh PostgreSQL storage: see below); a warm-up first; "
    "`gc.collect()` between repetitions; the order of the sides alternates between "
    "repetitions; `time.perf_counter_ns`. Each figure is the median over repetitions "
    "of that repetition's statistic."
)
DURABILITY = (
    "- **Durability**: LangGraph runs with its default durability (`async`: checkpoints "
    "are written in a background thread); its SQLite saver is `SqliteSaver` on one "
    "connection after `setup()`, which turns on WAL mode and leaves SQLite's default "
    "`synchronous=FULL` (an fsync per commit). Holdpoint commits each superstep's events "
    "before the next superstep starts (LangGraph's `sync`); its SQLite store is WAL with "
    "`synchronous=NORMAL` by default (no fsync per commit: safe against a process crash, "
    "not a power cut). The *Holdpoint, synchronous=full* rows open the store with "
    "`?synchronous=full`, LangGraph's setting, for context; the targets use the default. "
    "On PostgreSQL, Holdpoint commits each superstep's events with one autocommit "
    "statement (a function that takes the events table's EXCLUSIVE lock, notifies and "
    "inserts) and the server's `synchronous_commit` (a WAL flush per commit); LangGraph's "
    "`PostgresSaver` is on one autocommit connection."
)
NOISE = (
    "- **Noise**: absolute times on this shared 2-core box vary from run to run, by "
    "up to 70 % over a day (see the speed probe); the ratios are what counts. "
    "*ratio H/L* is Holdpoint's figure divided by LangGraph's: below 1 means Holdpoint "
    "is faster or smaller (for threads/s, above 1 means faster)."
)


def postgres_line(server: Server | None, problem: str | None) -> str:
    """Say which PostgreSQL server the run used and how, or why it was skipped."""
    if server is None:
        return (
            f"- **PostgreSQL: skipped**: {problem or 'no server'}. Every `postgres` row "
            f"and benchmark 5 are left out. Start a server with `bash .ci/postgres.sh` (as "
            f"root), or set {URL_VARIABLE} (now {redacted(configured_url())})."
        )
    return (
        f"- **PostgreSQL**: server {server.version} at {redacted(server.url)} "
        f"({server.settings}). Holdpoint: `open_store(URL?schema=NAME)` with the default "
        "pool, a new schema per repetition, dropped afterwards (`DROP SCHEMA ... CASCADE`). "
        "LangGraph: `PostgresSaver.from_conn_string` on its own database "
        f"(`{redacted(server.langgraph_url)}`: one autocommit connection, no pool, no "
        "pipeline), `setup()`, its checkpoint tables truncated before each repetition."
    )


def _version(package: str) -> str:
    """The package's version here, or in LangGraph's server environment (`LANGGRAPH_VENV`)."""
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        pass
    found = metadata.distributions(
        path=[str(p) for p in LANGGRAPH_VENV.glob("lib/python*/site-packages")]
    )
    versions = {d.metadata["Name"].lower().replace("_", "-"): d.version for d in found}
    return versions.get(package, "not installed")


def _git_revision(root: Path) -> str:
    git = shutil.which("git")
    if git is None:
        return "unknown (git not found)"

    def run(*args: str) -> str:
        done = subprocess.run([git, *args], cwd=root, capture_output=True, text=True, check=True)
        return done.stdout.strip()

    try:
        head = run("rev-parse", "--short", "HEAD")
        dirty = run("status", "--porcelain")
    except subprocess.CalledProcessError:
        return "unknown (no commit yet)"
    return f"{head}{' + uncommitted changes' if dirty else ''}"


def _probe_work() -> int:
    """Fixed single-thread work of the kind the benchmarks time: JSON and SHA-256."""
    total = 0
    for i in range(2_000):
        event = {"thread_id": f"t-{i % 97}", "version": i, "fields": {"n": i * 1.5, "k": [i] * 3}}
        text = json.dumps(event, sort_keys=True, separators=(",", ":"))
        total += len(hashlib.sha256(text.encode()).hexdigest()) + len(json.loads(text))
    return total


def speed_probe(reps: int = 7) -> float:
    """Milliseconds of `_probe_work` (median of `reps`): how fast the box is right now.

    The same work takes longer when other work shares the machine's cores; the
    report gives the probe before each benchmark, so that a figure can be read
    against how fast the box was when it was measured.
    """
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        _probe_work()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def probe_line(probes: list[tuple[str, float]]) -> str:
    """The header line of the speed probes taken during the run, in order."""
    taken = ", ".join(f"{label} {millis:.1f}" for label, millis in probes)
    return (
        "- **Speed probe** (`bench.machine.speed_probe`: fixed single-thread JSON and "
        "SHA-256 work, median of 7, in ms; lower is a faster box), taken before each "
        f"benchmark and at the end: {taken}. Compare it across runs (the history of this "
        "file) to tell a slower box from slower code."
    )


def load_average() -> float:
    """Return the 1-minute load average (0.0 where the platform has none)."""
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0


def _cpu_times() -> tuple[int, int] | None:
    """(idle, total) jiffies of all CPUs since boot, from /proc/stat (None elsewhere)."""
    try:
        with open("/proc/stat", encoding="ascii") as stat:
            fields = [int(value) for value in stat.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    return fields[3] + fields[4], sum(fields[:8])  # idle + iowait; without guest time


def cpu_busy(seconds: float = 1.0) -> float | None:
    """The share of all CPUs' time spent busy over the next `seconds` (None where
    /proc/stat is missing): what other work takes of the box, unlike the load average,
    which on this box stays near 1.0 while vmstat reports the CPUs 100 % idle."""
    before = _cpu_times()
    time.sleep(seconds)
    after = _cpu_times()
    if before is None or after is None or after[1] <= before[1]:
        return None
    return 1 - (after[0] - before[0]) / (after[1] - before[1])


def header_lines(
    root: Path,
    command: str,
    started: datetime,
    seconds: float,
    load_at_start: float,
    busy_at_start: float | None,
    postgres: str,
    probes: list[tuple[str, float]],
) -> list[str]:
    """Return markdown bullet lines saying where, when and how the run happened."""
    versions = ", ".join(f"{p} {_version(p)}" for p in PACKAGES)
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return [
        (
            f"- **Date**: {started.astimezone(UTC):%Y-%m-%d %H:%M} UTC; "
            f"the whole run took {seconds:.0f} s."
        ),
        f"- **Command**: `{command}` (from the repository root).",
        (
            f"- **Machine**: nproc {cpus}, {platform.machine()}, "
            f"{platform.system()} {platform.release()}; "
            f"Python {platform.python_version()} ({platform.python_implementation()})."
        ),
        f"- **Packages**: {versions}.",
        (
            f"- **Other load**: CPU busy in the second before the first benchmark, all CPUs: "
            f"{'n/a' if busy_at_start is None else f'{busy_at_start:.0%}'} (much above a few "
            "per cent means other work was sharing the machine); load average (1 min) at "
            f"start / end: {load_at_start:.2f} / {load_average():.2f} (on this box near 1.0 "
            "even when the CPUs are idle: read the CPU figure)."
        ),
        probe_line(probes),
        f"- **Revision**: {_git_revision(root)}.",
        METHOD,
        postgres,
        DURABILITY,
        NOISE,
    ]
