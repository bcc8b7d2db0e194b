"""Verify the whole log, or one thread, fast: batches read in SQL, ranges checked in parallel.

The log's positions (0, head] are cut into ranges; each range is read and
checked by a `domain.integrity.whole_log.RangeCheck` in a worker process
(`integrity.worker`, a fresh interpreter with connections of its own), and the
summaries are joined in order by a `LogCheck`. Hashing canonical JSON is
the cost, and two cores halve it. Small logs and the memory store are
checked in this process. Each aggregate the check suspects is then read
whole and explained by `domain.integrity.diagnosis`.
"""

from __future__ import annotations

import os
import pickle
import queue
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from functools import partial
from typing import IO

import structlog

from domain.integrity.decodable import reference_transcoder
from domain.integrity.diagnosis import diagnose
from domain.integrity.whole_log import LogCheck, LogVerdict, Problem, RangeSummary
from domain.record.application import Workflows
from domain.record.thread_uuids import thread_uuid
from integrity.purges import purged_leaves
from integrity.ranges import ScanPlan, check_range, thread_id_of
from integrity.scan import Scanner, Source, scanner_for, source_for

Progress = Callable[[str, int, int], None]
PARALLEL_FROM = 100_000  # positions: below this, one process is faster than spawning workers
RANGES_PER_JOB = 16  # ranges per process, before the last ones are cut smaller
LAST_RANGE = 5_000  # positions: the smallest range, at the end of the log
INCONSISTENT = "inconsistent"
log = structlog.get_logger()


@dataclass
class LogScan:
    """A verified log, and what a seal needs from it."""

    verdict: LogVerdict
    leaves: bytes = b""
    late: list[tuple[int, str, int, str]] = field(default_factory=list)


def default_jobs() -> int:
    """Processes that check the log: one per CPU (at most 4), this one included, which
    checks ranges while it joins the workers' results. A process more than the CPUs
    only makes them take turns (BENCHMARKS.md, "Design choices, measured")."""
    return min(os.cpu_count() or 1, 4)


class _Workers:
    """Worker processes (`integrity.worker`), each fed the next range as soon as it is free;
    the summaries are handed out in range order. A worker's stderr goes to a file, so
    that nothing it writes there can block it."""

    def __init__(self, source: Source, plan: ScanPlan, workers: int) -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(path for path in sys.path if path)}
        self.processes: list[subprocess.Popen[bytes]] = []
        self.errors: list[IO[bytes]] = []
        self.results: dict[int, RangeSummary | BaseException] = {}
        self.ready = threading.Condition()
        try:
            for _ in range(workers):
                errors = tempfile.TemporaryFile()  # noqa: SIM115 - closed by stop()
                self.errors.append(errors)
                self.processes.append(
                    subprocess.Popen(
                        [sys.executable, "-m", "integrity.worker"],
                        stdin=subprocess.PIPE,
                        stdout=subprocess.PIPE,
                        stderr=errors,
                        env=env,
                    )
                )
            for process in self.processes:
                self._send(process, (source, plan))
        except BaseException:
            self.stop(kill=True)
            raise

    @staticmethod
    def _send(process: subprocess.Popen[bytes], message: object) -> None:
        assert process.stdin is not None
        pickle.dump(message, process.stdin)
        process.stdin.flush()

    def _serve(self, number: int, work: queue.Queue[tuple[int, int, int]]) -> None:
        process = self.processes[number]
        assert process.stdout is not None
        try:
            while True:
                try:
                    index, after, upto = work.get_nowait()
                except queue.Empty:
                    self._send(process, None)
                    return
                self._send(process, (after, upto))
                try:
                    # our own worker's answer: pickle is safe between our processes
                    result: RangeSummary | BaseException = pickle.load(process.stdout)
                except EOFError:
                    result = RuntimeError(self._failure(number))
                with self.ready:
                    self.results[index] = result
                    self.ready.notify_all()
                if isinstance(result, BaseException):
                    return
        except BaseException as error:  # handed to the joining thread
            with self.ready:
                self.results[-1] = error
                self.ready.notify_all()

    def _failure(self, number: int) -> str:
        process, errors = self.processes[number], self.errors[number]
        process.wait()
        errors.seek(0)
        text = errors.read().decode(errors="replace")[-2000:]
        return f"a verify worker stopped (exit status {process.returncode}): {text}"

    def _done(self, index: int) -> bool:
        """Whether range `index` is checked, or a worker failed (call with `ready` held)."""
        return index in self.results or -1 in self.results

    def _help(
        self,
        index: int,
        work: queue.Queue[tuple[int, int, int]],
        local: Callable[[int, int], RangeSummary],
    ) -> None:
        """Check ranges here until the summary of range `index` is ready."""
        while True:
            with self.ready:
                if self._done(index):
                    return
            try:
                number, after, upto = work.get_nowait()
            except queue.Empty:
                return
            summary = local(after, upto)
            with self.ready:
                self.results[number] = summary
                self.ready.notify_all()

    def run(
        self, ranges: list[tuple[int, int]], local: Callable[[int, int], RangeSummary]
    ) -> Iterator[RangeSummary]:
        """The summaries of `ranges`, in order. While the next one is not ready, this
        process checks a range too (`local`): it works while the workers start."""
        work: queue.Queue[tuple[int, int, int]] = queue.Queue()
        for index, (after, upto) in enumerate(ranges):
            work.put((index, after, upto))
        threads = [
            threading.Thread(target=self._serve, args=(number, work), daemon=True)
            for number in range(len(self.processes))
        ]
        for thread in threads:
            thread.start()
        finished = False
        try:
            for index in range(len(ranges)):
                self._help(index, work, local)
                with self.ready:
                    self.ready.wait_for(partial(self._done, index))
                    result = self.results.pop(index, None) or self.results[-1]
                if isinstance(result, BaseException):
                    raise result
                yield result
            finished = True
        finally:
            self.stop(kill=not finished)
            for thread in threads:
                thread.join()

    def stop(self, *, kill: bool) -> None:
        """End the workers: they end themselves when the work is done; else kill them."""
        for process in self.processes:
            if kill and process.poll() is None:
                process.kill()
        for process in self.processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            for stream in (process.stdin, process.stdout):
                if stream is not None:
                    stream.close()
        for errors in self.errors:
            errors.close()


def _ranges(head: int, jobs: int) -> list[tuple[int, int]]:
    """Positions (0, head] cut into ranges for `jobs` processes: each a sixteenth of a
    process's share, except the last ones, cut to half of what each process has left to
    check (down to `LAST_RANGE`). While a process checks the last range, the others
    wait: with the last ranges small, they all finish at nearly the same time."""
    size = -(-head // (jobs * RANGES_PER_JOB))
    ranges: list[tuple[int, int]] = []
    start = 0
    while start < head:
        left = head - start
        upto = min(start + min(size, max(left // (2 * jobs), LAST_RANGE)), head)
        ranges.append((start, upto))
        start = upto
    return ranges


def scan_log(
    store: Workflows,
    *,
    plan: ScanPlan | None = None,
    jobs: int | None = None,
    progress: Progress | None = None,
    upto: int | None = None,
) -> LogScan:
    """Check every event at positions up to `upto` (default: the head), and diagnose."""
    plan = plan or ScanPlan()
    jobs = default_jobs() if jobs is None else max(1, jobs)
    scanner = scanner_for(store)
    try:
        head = scanner.head() if upto is None else upto
        purged, purge_problems = purged_leaves(store)
        joined = LogCheck(dense=scanner.dense, purged=purged, leaves_upto=plan.leaves_upto)
        source = source_for(store)
        say: Progress = progress or (lambda *_: None)
        say("verifying", 0, head)
        if source is None or jobs == 1 or head < PARALLEL_FROM:
            summary = check_range(scanner, 0, head, plan, lambda at: say("verifying", at, head))
            joined.add(summary)
        else:
            work = _ranges(head, jobs)

            def here(after: int, upto: int) -> RangeSummary:
                return check_range(scanner, after, upto, plan)

            for summary in _Workers(source, plan, jobs - 1).run(work, here):
                joined.add(summary)
                say("verifying", summary.upto, head)
        suspects = dict(joined.verdict.suspects)
        if suspects:
            say("diagnosing", 0, len(suspects))
        problems: list[Problem] = list(purge_problems)
        transcoder = reference_transcoder()
        for done, (aggregate_id, position) in enumerate(sorted(suspects.items()), start=1):
            found = diagnose(aggregate_id, scanner.aggregate_rows(aggregate_id, head), transcoder)
            problems += found or [_unexplained(aggregate_id, position)]
            say("diagnosing", done, len(suspects))
        verdict = joined.finish(problems)
        verdict.head = head
        log.debug(
            "log verified",
            events=verdict.events,
            threads=verdict.threads,
            problems=len(verdict.problems),
            jobs=jobs,
        )
        return LogScan(verdict, b"".join(joined.leaves), joined.late)
    finally:
        scanner.close()


def _unexplained(aggregate_id: str, position: int) -> Problem:
    return Problem(
        INCONSISTENT,
        "the fast check found this aggregate wrong near this position, but the detailed "
        "check found nothing: please report it as a bug",
        aggregate_id,
        position=position,
    )


def with_thread_ids(problems: list[Problem], scanner: Scanner) -> list[Problem]:
    """The problems, each naming its thread where its aggregate is a thread."""
    unnamed = sorted({p.aggregate_id for p in problems if p.aggregate_id and not p.thread_id})
    names = {
        aggregate_id: name
        for aggregate_id, state in scanner.first_events(unnamed).items()
        # a thread's first event names it; another aggregate's (a cron's) may name one too
        if (name := thread_id_of(state)) is not None and thread_uuid(name).hex == aggregate_id
    }
    return [
        replace(p, thread_id=names.get(p.aggregate_id)) if p.aggregate_id in names else p
        for p in problems
    ]


def verify_thread_events(store: Workflows, thread_id: str) -> tuple[int, list[Problem]]:
    """One thread, checked whole by the exact rules: (events checked, problems)."""
    scanner = scanner_for(store)
    try:
        aggregate_id = thread_uuid(thread_id).hex
        rows = scanner.aggregate_rows(aggregate_id, scanner.head())
        problems = diagnose(aggregate_id, rows, reference_transcoder()) if rows else []
    finally:
        scanner.close()
    return len(rows), problems
