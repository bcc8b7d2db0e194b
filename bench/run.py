"""Command line: run the benchmarks and write BENCHMARKS.md.

.venv/bin/python -m bench.run            # full run, writes BENCHMARKS.md
.venv/bin/python -m bench.run --quick    # smoke run, writes bench/.work/BENCHMARKS.md
.venv/bin/python -m bench.run --only get_state
"""

from __future__ import annotations

import argparse
import logging
import shlex
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

if __package__ in (None, ""):  # run as a script: python bench/run.py
    # The repository root instead of bench/, whose http.py would shadow the standard
    # library's http package.
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

from bench.backends import LANGGRAPH, load_sides
from bench.cases import CASES
from bench.harness import QUICK, Progress, Runner, Settings
from bench.http import HTTP_CASES
from bench.integrity import INTEGRITY_CASES
from bench.kinds import KINDS_CASES
from bench.load import LOAD_CASES
from bench.machine import cpu_busy, header_lines, load_average, postgres_line, speed_probe
from bench.postgres import connect
from bench.projections import PROJECTION_CASES
from bench.report import CaseResult, write_report
from bench.runs import RUN_CASES
from bench.saver import SAVER_CASES
from bench.time_travel import TIME_TRAVEL_CASES
from service.bootstrap import configure_logging

ALL_CASES = {
    **CASES,
    **PROJECTION_CASES,
    **HTTP_CASES,
    **RUN_CASES,
    **LOAD_CASES,
    **INTEGRITY_CASES,
    **KINDS_CASES,
    **TIME_TRAVEL_CASES,
    **SAVER_CASES,
}
ROOT = Path(__file__).resolve().parent.parent
FULL_REPORT = ROOT / "BENCHMARKS.md"
PARTIAL_REPORT = ROOT / "bench" / ".work" / "BENCHMARKS.md"


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.run",
        description="Benchmark Holdpoint against LangGraph; write a markdown report.",
    )
    parser.add_argument("--quick", action="store_true", help="small workloads, one repetition")
    parser.add_argument(
        "--only",
        action="append",
        choices=list(ALL_CASES),
        metavar="NAME",
        help=f"run only this benchmark (repeatable): {', '.join(ALL_CASES)}",
    )
    parser.add_argument(
        "--output",
        type=Path,
        help="report path (default: BENCHMARKS.md for a full run of every benchmark, "
        "bench/.work/BENCHMARKS.md otherwise)",
    )
    return parser.parse_args(argv)


def _progress(started: float) -> Progress:
    def say(message: str) -> None:
        print(
            f"[{time.perf_counter() - started:6.1f}s] {message}",
            file=sys.stderr,
            flush=True,
        )

    return say


def _summary(result: CaseResult) -> list[str]:
    return [f"  {t.description}: {t.detail} -> {t.verdict}" for t in result.targets]


def main(argv: list[str] | None = None) -> int:
    """Run the selected benchmarks; exit status 1 if a side failed or is missing."""
    args = _parse(sys.argv[1:] if argv is None else argv)
    # Holdpoint's own log lines (a checkpoint that found the file busy, a verified log) are
    # not the report's: warnings and errors only.
    configure_logging(level=logging.WARNING)
    settings = QUICK if args.quick else Settings()
    names = args.only or list(ALL_CASES)
    output = args.output or (FULL_REPORT if not (args.quick or args.only) else PARTIAL_REPORT)
    load_at_start, busy_at_start = load_average(), cpu_busy()
    clock = time.perf_counter()
    started = datetime.now(UTC)
    say = _progress(clock)

    sides, missing = load_sides()
    for name, reason in missing.items():
        say(f"WARNING: {name} is not available, running without it: {reason}")
    if LANGGRAPH in missing:
        return 2

    server, problem = connect()
    if problem is not None:
        say(f"WARNING: the PostgreSQL benchmarks are skipped: {problem}")
    runner = Runner(sides, settings, say, server, problem)
    results = []
    probes: list[tuple[str, float]] = []
    for name in names:
        probes.append((name, speed_probe()))
        first_error = len(runner.errors)
        result = ALL_CASES[name](runner)
        result.errors = runner.errors[first_error:]
        results.append(result)
        print(result.title)
        print("\n".join(_summary(result)), flush=True)

    probes.append(("end", speed_probe()))
    command = shlex.join(["python", "-m", "bench.run", *(sys.argv[1:] if argv is None else argv)])
    header = header_lines(
        ROOT,
        command,
        started,
        time.perf_counter() - clock,
        load_at_start,
        busy_at_start,
        postgres_line(server, problem),
        probes,
    )
    if args.quick:
        header.append(
            "- **Smoke run** (`--quick`): small workloads and one repetition; the verdicts "
            "below do not judge the targets, which are set for the full sizes."
        )
    write_report(output, results, header, missing)
    print(f"wrote {output}")
    return 1 if missing or runner.errors else 0


if __name__ == "__main__":
    sys.exit(main())
