"""Read-model benchmarks (issue 4, Performance): queue page, rebuild, report, lag.

Holdpoint only (LangGraph has no read models); each on a SQLite file and on
PostgreSQL (the lag on PostgreSQL only), a fresh store or schema each, PostgreSQL
schemas dropped afterwards. Logs are generated with the domain objects
(``WorkflowThread.start``, ``record``, ``raise_interrupt``) and saved many
threads per commit with ``store.events.put``: the same events a graph records,
without running 100,000 graphs one by one.
"""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.backends import scratch_dir
from bench.harness import QUICK, Runner
from bench.postgres import drop_schema, new_schema_name, schema_tables, settle
from bench.report import CaseResult, Table, Target, skipped_row, skipped_target
from bench.stats import fmt_ms, fmt_num, median, timed_calls

if TYPE_CHECKING:
    from collections.abc import Callable

    from bench.postgres import Server

ROOT = Path(__file__).resolve().parent.parent
PAGE_P99_MS = 10.0
REBUILD_EVENTS_PER_S = 20_000.0
REBUILD_TO_READ = 0.5  # issue 26: a rebuild at least half as fast as the library's read
REBUILD_REPS = 3  # rebuilds of every read model per log: the median counts
LIBRARY_PAGE = 1_000  # notifications per page when the library reads a log, for scale
REPORT_S = 1.0
LAG_P99_S = 1.0
STORES = ("sqlite", "postgres")
EVENTS_PER_PAUSED_THREAD = 3  # ThreadStarted, InputReceived, InterruptRaised
EVENTS_PER_INTERRUPT = 4  # ... and its InterruptResumed (or expiry, or cancellation)
BENCH_ACTOR = {"id": "bench", "role": "operator"}


@dataclass(frozen=True)
class Sizes:
    """Workload sizes of the read-model benchmarks."""

    queue_threads: int = 100_000
    page_calls: int = 200
    rebuild_threads: tuple[int, ...] = (5_000, 10_000)
    report_events: int = 1_000_000
    report_calls: int = 5
    lag_seconds: float = 20.0
    lag_events_per_s: float = 500.0


QUICK_SIZES = Sizes(
    queue_threads=2_000,
    page_calls=50,
    rebuild_threads=(500, 1_000),
    report_events=40_000,
    report_calls=2,
    lag_seconds=4.0,
)


def _sizes(runner: Runner) -> Sizes:
    return QUICK_SIZES if runner.settings == QUICK else Sizes()


def _percentile(values: list[float], fraction: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    return ordered[max(int(fraction * len(ordered) + 0.999999) - 1, 0)]


@contextmanager
def fresh_store(backend: str, server: Server | None) -> Iterator[tuple[Any, str]]:
    """A new, empty Holdpoint store on ``backend``; yields (store, its URL)."""
    from domain.record.store import open_store  # noqa: PLC0415

    if backend == "postgres":
        assert server is not None
        schema = new_schema_name()
        url = server.holdpoint_url(schema)
        try:
            with open_store(url) as store:
                yield store, url
        finally:
            drop_schema(server, schema)
        return
    with scratch_dir() as directory:
        url = f"sqlite:///{directory / 'bench.db'}"
        with open_store(url) as store:
            yield store, url


AT_REST = (
    "On PostgreSQL the store's tables are first brought to rest, untimed, as "
    "autovacuum and the checkpointer leave a live log: VACUUM (ANALYZE) and a CHECKPOINT "
    "(`bench.postgres.settle`); otherwise the first read after a bulk insert also writes "
    "every page's hint bits, and the checkpointer writes them out during the timed read."
)


def settle_store(runner: Runner, backend: str, store: Any, after: str = "the fill") -> None:
    """On PostgreSQL, bring every table of the store to rest (`AT_REST`), `after` a bulk
    write: the fill of its log, or a rebuild, whose read-model rows the checkpointer would
    otherwise write out during the timed reads that follow (seen: a WAL checkpoint of a
    10,000,000-event rebuild's pages ran through the queue's timed pages)."""
    if backend != "postgres" or runner.server is None:
        return
    schema = str(store.env.get("POSTGRES_SCHEMA") or "public")
    runner.progress(f"{backend}: VACUUM (ANALYZE) and CHECKPOINT after {after}")
    if not settle(runner.server, *schema_tables(runner.server, schema)):
        runner.progress(f"{backend}: CHECKPOINT skipped, the role lacks pg_checkpoint")


def paused_thread(index: int, graph_count: int = 5) -> Any:
    """A thread started, given input and paused on an interrupt (events not yet saved)."""
    from domain.record.thread import WorkflowThread  # noqa: PLC0415

    thread = WorkflowThread.start(
        thread_id=f"bench-{index:07d}",
        graph_id=f"graph-{index % graph_count}",
        graph_digest="bench",
        channels={"amount": None, "approved": None},
        initial={},
        waiting_edges={},
        metadata={"customer": f"c{index % 97}"},
        actor=BENCH_ACTOR,
    )
    thread._record(
        WorkflowThread.InputReceived,
        run_id=f"run-{index}",
        input={"amount": index},
        actor=BENCH_ACTOR,
    )
    thread.raise_interrupt(
        step=1, node="review", index=0, value={"question": "approve refund?", "amount": index}
    )
    return thread


def build_paused(store: Any, threads: int, per_commit: int = 1_000) -> int:
    """Record ``threads`` paused threads, ``per_commit`` per transaction; return events saved."""
    batch: list[Any] = []
    saved = 0
    for index in range(threads):
        batch += paused_thread(index).collect_events()
        if len(batch) >= per_commit * EVENTS_PER_PAUSED_THREAD:
            store.events.put(batch)
            saved += len(batch)
            batch = []
    if batch:
        store.events.put(batch)
        saved += len(batch)
    return saved


def _skip(result: CaseResult, backend: str, reason: str, descriptions: list[str]) -> None:
    result.tables[0].rows.append(skipped_row(backend, reason, len(result.tables[0].columns) - 2))
    result.targets += [skipped_target(d, reason) for d in descriptions]


def _guard(runner: Runner, label: str, job: Callable[[], None]) -> None:
    """Run ``job``, recording (not raising) its error."""

    def once(*, warm_up: bool) -> dict[str, float]:  # noqa: ARG001
        job()
        return {}

    runner.attempt(label, "Holdpoint", once, warm_up=False)


# -- 1. pending-queue page query ---------------------------------------------


def queue_page(runner: Runner) -> CaseResult:
    """Benchmark: a page of the pending-approval queue with 100,000 open approvals."""
    from projections.pending_approvals import (  # noqa: PLC0415
        PendingApprovals,
        PendingApprovalsProjection,
    )
    from projections.runner import ProjectionRunner  # noqa: PLC0415

    sizes = _sizes(runner)
    result = CaseResult(
        "queue",
        "Read models: pending-queue page query",
        f"{sizes.queue_threads:,} threads each paused on one interrupt "
        f"({EVENTS_PER_PAUSED_THREAD} events each: ThreadStarted, InputReceived, InterruptRaised; "
        "5 graphs), generated with the domain objects and saved 1,000 threads per commit; "
        "a projection runner with the pending-approvals read model alone catches up (its "
        "wall time is reported; the rebuild benchmark times the full catalogue), then "
        f"`PendingApprovals(runner.db).page(...)` is called {sizes.page_calls} times per "
        "query after 5 untimed calls: the first page (limit 50), a page filtered by graph_id, "
        "a deep keyset page (the cursor of the row at 90% of the queue), and two searches "
        "as the inbox's search box makes them (a metadata word, the start of a thread id; "
        "reported, outside the page target: on PostgreSQL a read model just caught up has "
        "no planner statistics until autovacuum analyses it). "
        "Each call also "
        "counts the matching rows (`total`). One repetition per store.",
        [Table(["store", "query", "rows matching", "p50 ms", "p99 ms", "max ms"])],
    )
    extra = Table(
        ["store", "open approvals", "events", "build s", "catch-up s", "catch-up events/s"]
    )
    result.tables.append(extra)
    for backend in STORES:
        description = f"{backend}: page p99 < {PAGE_P99_MS:g} ms with {sizes.queue_threads:,} open"
        reason = runner.skipped(backend)
        if reason is not None:
            _skip(result, backend, reason, [description])
            continue

        def job(backend: str = backend, description: str = description) -> None:
            with fresh_store(backend, runner.server) as (store, _url):
                runner.progress(f"queue/{backend}: building {sizes.queue_threads:,} threads")
                start = time.perf_counter()
                events = build_paused(store, sizes.queue_threads)
                built = time.perf_counter() - start
                runner.progress(f"queue/{backend}: catching up")
                projector = ProjectionRunner(store, [PendingApprovalsProjection()])
                try:
                    start = time.perf_counter()
                    projector.catch_up()
                    caught = time.perf_counter() - start
                    extra.rows.append(
                        [
                            backend,
                            f"{sizes.queue_threads:,}",
                            f"{events:,}",
                            fmt_num(built),
                            fmt_num(caught),
                            fmt_num(events / caught),
                        ]
                    )
                    queue = PendingApprovals(projector.db)
                    deep = deep_cursor(queue, sizes.queue_threads)
                    # the start of the ids of 100 threads (bench-00090 of 100,000), at any size
                    prefix = f"bench-{sizes.queue_threads * 9 // 100:07d}"[:-2]
                    queries: dict[str, Callable[[], Any]] = {
                        "first page, limit 50": lambda: queue.page(limit=50),
                        "graph_id = graph-3, limit 50": lambda: queue.page(
                            graph_id="graph-3", limit=50
                        ),
                        "deep keyset page (90%), limit 50": lambda: queue.page(
                            limit=50, after=deep
                        ),
                        # the inbox's search box: a metadata word (1 thread in 97), and
                        # the start of one thread's id
                        "search customer c42, limit 50": lambda: queue.page(search="c42", limit=50),
                        f"search thread id {prefix}, limit 50": lambda: queue.page(
                            search=prefix, limit=50
                        ),
                    }
                    worst = 0.0
                    for name, call in queries.items():
                        runner.progress(f"queue/{backend}: {name}")
                        page = call()
                        if not page.items:
                            message = f"{name}: empty page"
                            raise RuntimeError(message)
                        times = timed_calls(call, sizes.page_calls, warm_up=5)
                        p99 = _percentile(times, 0.99)
                        if not name.startswith("search"):  # searches: reported, no limit
                            worst = max(worst, p99)
                        result.tables[0].rows.append(
                            [
                                backend,
                                name,
                                f"{page.total:,}",
                                fmt_ms(median(times)),
                                fmt_ms(p99),
                                fmt_ms(max(times)),
                            ]
                        )
                    result.targets.append(
                        Target(
                            description,
                            worst < PAGE_P99_MS,
                            f"worst p99 {fmt_ms(worst)} ms (limit {PAGE_P99_MS:g})",
                        )
                    )
                finally:
                    projector.close()

        before = len(result.targets)
        _guard(runner, f"queue/{backend}", job)
        if len(result.targets) == before:
            result.targets.append(Target(description, None, "error, see below"))
    return result


def deep_cursor(queue: Any, total: int) -> str:
    """The keyset cursor of the row at about 90% of the queue."""
    at, cursor = 0, None
    target = int(total * 0.9)
    while at < target:
        page = queue.page(limit=min(1_000, target - at), after=cursor)
        at += len(page.items)
        cursor = page.next_cursor
        if cursor is None:
            break
    assert cursor is not None
    return str(cursor)


# -- 2. rebuild throughput ---------------------------------------------------


def _timed(call: Callable[..., object], *args: Any) -> tuple[float, float]:
    """Wall and CPU seconds of one call (this process's CPU), after a garbage collection."""
    gc.collect()
    start, cpu = time.perf_counter(), time.process_time()
    call(*args)
    return time.perf_counter() - start, time.process_time() - cpu


def library_read(store: Any) -> int:
    """Read every notification of `store` through the library, 1,000 per page (as
    `eventsourcing`'s own benchmark in ../shared/anchors/es_bench.md); return the count."""
    recorder, start, read = store.recorder, 1, 0
    while page := recorder.select_notifications(start=start, limit=LIBRARY_PAGE):
        read += len(page)
        start = page[-1].id + 1
    return read


def rebuild_throughput(runner: Runner) -> CaseResult:
    """Benchmark: ``runner.rebuild()`` of every read model, events/s."""
    from projections.catalog import all_projections, runner_for  # noqa: PLC0415

    sizes = _sizes(runner)
    result = CaseResult(
        "rebuild",
        "Read models: rebuild throughput",
        "Logs of paused threads as in the queue benchmark "
        f"({', '.join(f'{n:,}' for n in sizes.rebuild_threads)} threads, "
        f"{EVENTS_PER_PAUSED_THREAD} events each), on a fresh store each; "
        "`runner_for(store).rebuild()` (every read model: pending approvals, thread index, "
        "oversight; the runner's rebuild batches, 10,000 positions per transaction; on "
        "PostgreSQL the next batch read while one is applied) from position zero, timed "
        f"{REBUILD_REPS} times in a row (wall and CPU s: the medians), "
        "including the creation of the indexes only readers use, which the rebuild drops "
        "with the rows; events/s = events in the log / wall time (one pass over the "
        "log feeds every read model). CPU s = CPU time of the benchmark process over the "
        "same call (without the database server's, on PostgreSQL): less sensitive than the "
        "wall time to other load on the machine. Then, on the largest log, "
        "`rebuild([name])` of each read model alone. For scale, before each rebuild the "
        "library reads the same log (`select_notifications`, 1,000 per page, as in "
        "`../shared/anchors/es_bench.md`, where it read about 200,000/s: the limit is a tenth "
        "of that); the row gives its median, and the target's line the ratio of the two "
        "medians, which the box's speed moves less than either (the verdict is on events/s). "
        "The sizes are below the queue "
        "benchmark's 100,000 threads to keep the run short. " + AT_REST + " The rows of "
        "each read model alone: one rebuild each.",
        [Table(["store", "what", "events", "wall s", "CPU s", "events/s"])],
    )
    for backend in STORES:
        description = f"{backend}: rebuild at least {REBUILD_EVENTS_PER_S:,.0f} events/s"
        to_read = (
            f"{backend}: rebuild at least {REBUILD_TO_READ:g} x the library's read of the "
            "same log, in the same run"
        )
        reason = runner.skipped(backend)
        if reason is not None:
            _skip(result, backend, reason, [description, to_read])
            continue

        def job(
            backend: str = backend, description: str = description, to_read: str = to_read
        ) -> None:
            rate = scale = 0.0
            for threads in sizes.rebuild_threads:
                with fresh_store(backend, runner.server) as (store, _url):
                    events = build_paused(store, threads)
                    settle_store(runner, backend, store)
                    projector = runner_for(store)
                    try:
                        runner.progress(f"rebuild/{backend}: {events:,} events, every model")
                        # from zero each time: the same work; each after the library's read
                        timings, reads = [], []
                        for _ in range(REBUILD_REPS):
                            reads.append(_timed(library_read, store))
                            timings.append(_timed(projector.rebuild))
                        wall, cpu = median([w for w, _ in timings]), median([c for _, c in timings])
                        rate = events / wall
                        read_wall = median([w for w, _ in reads])
                        read_cpu = median([c for _, c in reads])
                        scale = read_wall / wall
                        row = [backend, "all read models", f"{events:,}", fmt_num(wall)]
                        result.tables[0].rows.append([*row, fmt_num(cpu), fmt_num(rate)])
                        what = "the library reads the log (for scale)"
                        row = [backend, what, f"{events:,}", fmt_num(read_wall), fmt_num(read_cpu)]
                        result.tables[0].rows.append([*row, fmt_num(events / read_wall)])
                        if threads != sizes.rebuild_threads[-1]:
                            continue
                        for projection in all_projections():
                            runner.progress(f"rebuild/{backend}: {projection.name} alone")
                            alone, cpu = _timed(projector.rebuild, [projection.name])
                            row = [backend, f"{projection.name} alone", f"{events:,}"]
                            result.tables[0].rows.append(
                                [*row, fmt_num(alone), fmt_num(cpu), fmt_num(events / alone)]
                            )
                    finally:
                        projector.close()
            result.targets.append(
                Target(
                    description,
                    rate >= REBUILD_EVENTS_PER_S,
                    f"{fmt_num(rate)} events/s over {events:,} events "
                    f"(limit {REBUILD_EVENTS_PER_S:,.0f}); {scale:.2f} x the library's "
                    "reading of the same log in the same run (the limit is 0.10 x the "
                    "200,000/s of es_bench.md)",
                )
            )
            result.targets.append(
                Target(
                    to_read,
                    scale >= REBUILD_TO_READ,
                    f"ratio {scale:.2f} (limit {REBUILD_TO_READ:g}): {fmt_num(rate)} events/s "
                    f"against the library's {fmt_num(rate / scale)} over {events:,} events",
                )
            )

        before = len(result.targets)
        _guard(runner, f"rebuild/{backend}", job)
        if len(result.targets) == before:
            result.targets.append(Target(description, None, "error, see below"))
    return result


# -- 3. oversight report ---------------------------------------------------


BASE = datetime(2025, 1, 1, tzinfo=UTC)
REVIEWERS = tuple(f"reviewer-{n}" for n in range(20))
DECISIONS = ("approve", "approve", "approve", "reject", "edit", "respond")


def _stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _log_rows(interrupts: int) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """Oversight-log rows as the projection writes them, spread over 90 days.

    Of every 100 interrupts: 85 decided, 5 expired, 4 cancelled (with their
    thread), 1 superseded, 5 still open; a deadline on every other one.
    """
    rows, cancellations = [], []
    span = 90 * 86_400
    for n in range(interrupts):
        raised = BASE + timedelta(seconds=span * n / interrupts)
        thread, graph, kind = f"bench-{n:07d}", f"graph-{n % 5}", n % 100
        seconds = float(3 + (n * 37) % 7_200)
        due = _stamp(raised + timedelta(hours=1)) if n % 2 else None
        closed = _stamp(raised + timedelta(seconds=seconds))
        reviewer = REVIEWERS[n % len(REVIEWERS)]
        row: tuple[Any, ...]
        if kind < 85:
            decision = DECISIONS[n % len(DECISIONS)]
            row = ("decided", closed, decision, reviewer, "approver", None, seconds)
        elif kind < 90:
            row = ("expired", closed, "expired", None, None, None, seconds)
        elif kind < 94:
            row = ("cancelled", closed, None, None, None, None, None)
            cancellations.append((thread, graph, closed, "ops", "operator", "stopped by bench"))
        elif kind < 95:
            row = ("superseded", closed, None, None, None, None, None)
        else:
            row = ("open", None, None, None, None, None, None)
        rows.append(
            (f"{n:032x}", thread, graph, "review", 0, _stamp(raised), "approver", due, 0, *row)
        )
    return rows, cancellations


def _check_report_totals(name: str, report: dict[str, Any]) -> None:
    """The decisions by day add up to the decisions, the histogram to the human answers."""
    decisions = report["decisions"]
    by_day = sum(sum(kinds.values()) for kinds in decisions["by_day"].values())
    human = decisions["value"] - decisions["by_kind"]["expired"]
    binned = sum(b["count"] for b in report["time_to_decision_seconds"]["histogram"])
    if by_day != decisions["value"] or binned != human:
        message = f"{name}: {by_day} by day, {binned} binned; {decisions['value']} decisions"
        raise RuntimeError(message)


def oversight_report_case(runner: Runner) -> CaseResult:
    """Benchmark: the oversight report for a period over 1,000,000 events."""
    from projections.catalog import runner_for  # noqa: PLC0415
    from projections.oversight import CANCELLATIONS, INTERRUPTS  # noqa: PLC0415
    from projections.oversight_report import oversight_report  # noqa: PLC0415

    sizes = _sizes(runner)
    interrupts = sizes.report_events // EVENTS_PER_INTERRUPT
    result = CaseResult(
        "report",
        "Read models: oversight report",
        f"The report reads only the oversight read model, so its rows are written directly "
        f"with bulk INSERTs (executemany, 10,000 rows per statement batch), as the projection "
        f"writes them: {interrupts:,} interrupts over 90 days, 5 graphs, 20 reviewers (85% "
        "decided, 5% expired, 4% cancelled with their thread, 1% superseded, 5% open), the "
        f"read models of a log of about {sizes.report_events:,} events at "
        f"{EVENTS_PER_INTERRUPT} events per interrupt (ThreadStarted, InputReceived, "
        "InterruptRaised, InterruptResumed / expiry / cancellation): no events are recorded. "
        f"`oversight_report(db, since, until)` over the whole period, and for one graph, "
        f"timed {sizes.report_calls} times after one untimed call; the coverage figures are "
        "checked against the rows written, the decisions by day and the time-to-decision "
        "histogram against the decisions.",
        [Table(["store", "report", "interrupts", "median s", "max s"])],
    )
    for backend in STORES:
        description = f"{backend}: report over {sizes.report_events:,} events < {REPORT_S:g} s"
        reason = runner.skipped(backend)
        if reason is not None:
            _skip(result, backend, reason, [description])
            continue

        def job(backend: str = backend, description: str = description) -> None:
            with fresh_store(backend, runner.server) as (store, _url):
                projector = runner_for(store)
                try:
                    runner.progress(f"report/{backend}: inserting {interrupts:,} rows")
                    rows, cancellations = _log_rows(interrupts)
                    db = projector.db
                    columns = (
                        "interrupt_id, thread_id, graph_id, node, idx, raised_at, required_role, "
                        "due_by, escalations, outcome, closed_at, decision, reviewer_id, "
                        "reviewer_role, reason, seconds_to_decision"
                    )
                    marks = ", ".join(["%s"] * 16)
                    for offset in range(0, len(rows), 10_000):
                        with db.transaction() as cursor:
                            cursor.executemany(
                                f"INSERT INTO {db.table(INTERRUPTS)} ({columns}) VALUES ({marks})",
                                rows[offset : offset + 10_000],
                            )
                    with db.transaction() as cursor:
                        cursor.executemany(
                            f"INSERT INTO {db.table(CANCELLATIONS)} (thread_id, graph_id, "
                            "cancelled_at, actor_id, actor_role, reason) "
                            "VALUES (%s, %s, %s, %s, %s, %s)",
                            cancellations,
                        )
                        if backend == "postgres":
                            cursor.execute(f"ANALYZE {db.table(INTERRUPTS)}")
                    since, until = BASE, BASE + timedelta(days=91)
                    calls: dict[str, Callable[[], dict[str, Any]]] = {
                        "whole period": lambda: oversight_report(db, since=since, until=until),
                        "whole period, graph-2": lambda: oversight_report(
                            db, since=since, until=until, graph_id="graph-2"
                        ),
                    }
                    slowest = 0.0
                    for name, call in calls.items():
                        runner.progress(f"report/{backend}: {name}")
                        report = call()
                        coverage = report["coverage"]
                        expected = interrupts if name == "whole period" else None
                        if not coverage["accounted_for"] or (
                            expected is not None and coverage["raised"] != expected
                        ):
                            message = f"{name}: wrong coverage {coverage}"
                            raise RuntimeError(message)
                        _check_report_totals(name, report)
                        times = []
                        for _ in range(sizes.report_calls):
                            gc.collect()
                            start = time.perf_counter()
                            call()
                            times.append(time.perf_counter() - start)
                        slowest = max(slowest, median(times))
                        result.tables[0].rows.append(
                            [
                                backend,
                                name,
                                f"{coverage['raised']:,}",
                                fmt_num(median(times)),
                                fmt_num(max(times)),
                            ]
                        )
                    result.targets.append(
                        Target(
                            description,
                            slowest < REPORT_S,
                            f"{fmt_num(slowest)} s, median (limit {REPORT_S:g} s)",
                        )
                    )
                finally:
                    projector.close()

        before = len(result.targets)
        _guard(runner, f"report/{backend}", job)
        if len(result.targets) == before:
            result.targets.append(Target(description, None, "error, see below"))
    return result


# -- 4. projection lag -----------------------------------------------------


def _lag_writer(
    store: Any, stop: threading.Event, rate: float, log: list[tuple[int, float]]
) -> None:
    """Record cycles of (start + input + interrupt) then (resume), paced to ``rate`` events/s.

    ``log`` gets (notification id, time the commit returned) per commit.
    """
    from domain.record.thread import WorkflowThread  # noqa: PLC0415

    interval = EVENTS_PER_INTERRUPT / rate
    next_at = time.perf_counter()
    index = 0
    while not stop.is_set():
        thread = paused_thread(index)
        interrupt_id = next(iter(thread.interrupts))
        position = store.record(thread)
        log.append((position, time.perf_counter()))
        thread._record(
            WorkflowThread.InterruptResumed,
            interrupt_id=interrupt_id,
            resume={"approved": True},
            decision="approve",
            reason=None,
            actor={"id": REVIEWERS[index % len(REVIEWERS)], "role": "approver"},
            idempotency_key=None,
            run_id=f"run-{index}",
        )
        position = store.record(thread)
        log.append((position, time.perf_counter()))
        index += 1
        next_at += interval
        pause = next_at - time.perf_counter()
        if pause > 0:
            stop.wait(pause)


def _lag_poller(
    url: str, table: str, stop: threading.Event, samples: list[tuple[float, int]]
) -> None:
    """Every 10 ms, the lowest position of every read model, with the time read."""
    import psycopg  # noqa: PLC0415

    with psycopg.connect(url.partition("?")[0], autocommit=True) as conn:
        while not stop.is_set():
            row = conn.execute(f"SELECT min(position), count(*) FROM {table}").fetchone()
            if row is not None and row[1]:
                samples.append((time.perf_counter(), int(row[0])))
            stop.wait(0.01)


def _lags(commits: list[tuple[int, float]], samples: list[tuple[float, int]]) -> list[float]:
    """For each commit, the first sample at or past its position, minus its commit time."""
    lags, at = [], 0
    for position, committed in sorted(commits):
        while at < len(samples) and samples[at][1] < position:
            at += 1
        if at == len(samples):
            break
        lags.append(max(samples[at][0] - committed, 0.0))
    return lags


def projection_lag(runner: Runner) -> CaseResult:
    """Benchmark: projection lag under 500 events/s, PostgreSQL, separate projector."""
    from projections.catalog import runner_for  # noqa: PLC0415
    from projections.model_tables import POSITIONS  # noqa: PLC0415

    sizes = _sizes(runner)
    result = CaseResult(
        "lag",
        "Read models: projection lag under load",
        f"PostgreSQL. A writer thread records {sizes.lag_events_per_s:g} events/s for "
        f"{sizes.lag_seconds:g} s (paced): per cycle one commit of a new thread's ThreadStarted, "
        "InputReceived and InterruptRaised, then one commit of its InterruptResumed. "
        "`holdpoint projector` (default `--poll 0.2`; each commit's NOTIFY wakes it) runs as a "
        "subprocess (HOLDPOINT_STORE set to the schema) with every read model; another "
        "thread reads the lowest position in "
        "`holdpoint_projection_positions` every 10 ms. Lag of a commit = the time of the first "
        "read at or past its last notification id minus the time its commit returned to the "
        "writer (so it includes up to 10 ms of sampling). Commits still unapplied when the "
        "writer stops are waited for (up to 30 s) and counted.",
        [
            Table(
                [
                    "store",
                    "events written",
                    "events/s achieved",
                    "commits",
                    "p50 ms",
                    "p99 ms",
                    "max ms",
                ]
            )
        ],
    )
    backend = "postgres"
    description = f"postgres: lag p99 < {LAG_P99_S:g} s at {sizes.lag_events_per_s:g} events/s"
    reason = runner.skipped(backend)
    if reason is not None:
        _skip(result, backend, reason, [description])
        return result

    def job() -> None:
        with fresh_store(backend, runner.server) as (store, url):
            runner_for(store).close()  # create the tables and positions
            table = f'"{url.rpartition("schema=")[2]}".{POSITIONS}'
            env = {**os.environ, "HOLDPOINT_STORE": url}
            holdpoint = Path(sys.executable).with_name("holdpoint")
            projector = subprocess.Popen(
                [str(holdpoint), "projector"],
                env=env,
                cwd=ROOT,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
            try:
                stop_writer, stop_poller = threading.Event(), threading.Event()
                commits: list[tuple[int, float]] = []
                samples: list[tuple[float, int]] = []
                poller = threading.Thread(
                    target=_lag_poller, args=(url, table, stop_poller, samples), daemon=True
                )
                writer = threading.Thread(
                    target=_lag_writer,
                    args=(store, stop_writer, sizes.lag_events_per_s, commits),
                    daemon=True,
                )
                poller.start()
                time.sleep(1.0)  # the projector starts
                runner.progress(f"lag/postgres: writing for {sizes.lag_seconds:g} s")
                start = time.perf_counter()
                writer.start()
                time.sleep(sizes.lag_seconds)
                stop_writer.set()
                writer.join()
                written = time.perf_counter() - start
                last = max(position for position, _ in commits)
                deadline = time.perf_counter() + 30
                while time.perf_counter() < deadline and (not samples or samples[-1][1] < last):
                    time.sleep(0.05)
                stop_poller.set()
                poller.join()
            finally:
                projector.send_signal(signal.SIGTERM)
                try:
                    _, errors = projector.communicate(timeout=30)
                except subprocess.TimeoutExpired:
                    projector.kill()
                    _, errors = projector.communicate()
            if projector.returncode not in (0, -signal.SIGTERM):
                message = f"projector exited {projector.returncode}: {errors.decode()[-2000:]}"
                raise RuntimeError(message)
            lags = _lags(commits, samples)
            if len(lags) < len(commits):
                message = f"{len(commits) - len(lags)} commits never applied within 30 s"
                raise RuntimeError(message)
            events = len(commits) // 2 * EVENTS_PER_INTERRUPT
            millis = [lag * 1000 for lag in lags]
            p99 = _percentile(millis, 0.99)
            result.tables[0].rows.append(
                [
                    backend,
                    f"{events:,}",
                    fmt_num(events / written),
                    f"{len(commits):,}",
                    fmt_ms(median(millis)),
                    fmt_ms(p99),
                    fmt_ms(max(millis)),
                ]
            )
            result.targets.append(
                Target(
                    description,
                    p99 < LAG_P99_S * 1000,
                    f"p99 {fmt_ms(p99)} ms at {fmt_num(events / written)} events/s "
                    f"(limit {LAG_P99_S * 1000:g} ms)",
                )
            )

    _guard(runner, "lag/postgres", job)
    if not result.targets:
        result.targets.append(Target(description, None, "error, see below"))
    return result


PROJECTION_CASES: dict[str, Callable[[Runner], CaseResult]] = {
    "queue": queue_page,
    "rebuild": rebuild_throughput,
    "report": oversight_report_case,
    "lag": projection_lag,
}
