"""Benchmark 5: concurrent writers on one PostgreSQL store, against the raw driver.

Eight Python threads in one process, each running its own refund cycles (or
its own long loop) on its own thread ids, against one shared Holdpoint store
object. The events Holdpoint wrote per second (the store's max notification
id before and after) are compared with what the bare driver writes with the
same number of threads: single-row autocommit INSERTs, one transaction per
row, into a table keyed like the events table.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from functools import partial
from time import perf_counter_ns
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg import sql

from bench.backends import HOLDPOINT, LANGGRAPH, Side
from bench.graphs import CompiledGraph, loop_builder, message, refund_builder
from bench.harness import BenchError, Job, Runner, Settings, check
from bench.postgres import Server, count_checkpoints, raw_table
from bench.report import (
    CaseResult,
    Stats,
    Table,
    reported_target,
    skipped_row,
    skipped_target,
)
from bench.stats import fmt_num, fmt_ratio

if TYPE_CHECKING:
    from bench.graphs import Api

Writer = Callable[[int, Callable[[], None]], None]

RAW_ROW_BYTES = 400  # about the mean size of a Holdpoint event's state (see the table)
WARM_UP_CYCLES = 1
WARM_UP_STEPS = 5
HOLDPOINT_REFUND = "Holdpoint, refund cycles"
HOLDPOINT_LOOP = "Holdpoint, loop steps"
RAW = "raw psycopg INSERTs"
RAW_ONE = "raw psycopg INSERTs, 1 thread"
LANGGRAPH_REFUND = "LangGraph PostgresSaver, refund cycles"


def concurrently(writers: int, writer: Writer, counter: Callable[[], int]) -> tuple[float, int]:
    """Run ``writer(k, ready)`` in ``writers`` threads; time them from a common start.

    Each writer prepares (untimed), then calls ``ready()``, which returns when
    every writer is ready and the clock has started. The clock stops when the
    last writer ends. Returns the seconds and how much ``counter()`` grew.
    """
    gate = threading.Barrier(writers + 1)
    errors: list[BaseException] = []

    def ready() -> None:
        gate.wait()  # every writer prepared
        gate.wait()  # the clock has started

    def body(k: int) -> None:
        try:
            writer(k, ready)
        except BaseException as exc:
            errors.append(exc)
            gate.abort()

    threads = [threading.Thread(target=body, args=(k,), name=f"writer-{k}") for k in range(writers)]
    for thread in threads:
        thread.start()
    t0 = 0
    try:
        gate.wait()
        before = counter()
        t0 = perf_counter_ns()
        gate.wait()
    except threading.BrokenBarrierError:
        pass
    except BaseException:
        gate.abort()
        raise
    finally:
        for thread in threads:
            thread.join()
    elapsed = (perf_counter_ns() - t0) / 1e9
    if errors:
        raise errors[0]
    return elapsed, counter() - before


def refund_cycle(graph: CompiledGraph, api: Api, thread_id: str) -> None:
    """Run one refund thread to its interrupt, then resume it to END."""
    config = {"configurable": {"thread_id": thread_id}}
    paused = graph.invoke({"refund_amount": 250.0, "approved": False}, config)
    done = graph.invoke(api.Command(resume=True), config)
    check(ok="__interrupt__" in paused, what="no interrupt", got=paused)
    check(ok=done.get("approved") is True, what="not approved", got=done)


def refund_writer(graph: CompiledGraph, api: Api, cycles: int) -> Writer:
    """A writer that runs one untimed refund cycle, then ``cycles`` timed ones."""

    def writer(k: int, ready: Callable[[], None]) -> None:
        for i in range(WARM_UP_CYCLES):
            refund_cycle(graph, api, f"warm-{k}-{i}")
        ready()
        for i in range(cycles):
            refund_cycle(graph, api, f"writer-{k}-{i}")

    return writer


def loop_writer(warm: CompiledGraph, graph: CompiledGraph, steps: int) -> Writer:
    """A writer that runs a short untimed loop, then one timed ``steps``-step loop."""

    def writer(k: int, ready: Callable[[], None]) -> None:
        warm.invoke({"n": 0}, loop_config(f"warm-{k}", WARM_UP_STEPS))
        ready()
        out = graph.invoke({"n": 0}, loop_config(f"loop-{k}", steps))
        check(ok=out.get("n") == steps, what=f"loop did not end at n={steps}", got=out)

    return writer


def loop_config(thread_id: str, steps: int) -> dict[str, Any]:
    """The config of a loop thread of ``steps`` steps."""
    return {"configurable": {"thread_id": thread_id}, "recursion_limit": steps + 10}


def _opener(side: Side, server: Server) -> Any:
    if side.postgres is None:
        message_ = f"{side.name} has no PostgreSQL store"
        raise BenchError(message_)
    return side.postgres(server)


def mean_event_bytes(server: Server, store: Any) -> float:
    """Return the mean size of the ``state`` column of the store's events table."""
    recorder = store.recorder
    table = sql.Identifier(recorder.datastore.schema, recorder.events_table_name)
    with psycopg.connect(server.url, autocommit=True) as conn:
        row = conn.execute(
            sql.SQL("SELECT avg(octet_length(state)) FROM {}").format(table)
        ).fetchone()
    return float(row[0]) if row and row[0] is not None else 0.0


def holdpoint_writers(
    settings: Settings, server: Server, workload: str, side: Side, *, warm_up: bool
) -> Stats:
    """Run ``settings.writers`` writers on one fresh Holdpoint store; events/s."""
    writers = settings.writers
    with _opener(side, server) as store:
        if workload == "refund":
            units = 1 if warm_up else settings.writer_cycles
            graph = refund_builder(side.api).compile(checkpointer=store)
            writer = refund_writer(graph, side.api, units)
        else:
            units = WARM_UP_STEPS if warm_up else settings.writer_loop_steps
            warm = loop_builder(side.api, WARM_UP_STEPS).compile(checkpointer=store)
            graph = loop_builder(side.api, units).compile(checkpointer=store)
            writer = loop_writer(warm, graph, units)
        elapsed, events = concurrently(writers, writer, store.recorder.max_notification_id)
        event_bytes = mean_event_bytes(server, store)
    check(ok=events > 0, what="no events recorded", got=events)
    return {
        "rate": events / elapsed,
        "units_s": writers * units / elapsed,
        "written": events,
        "wall_s": elapsed,
        "event_bytes": event_bytes,
    }


def langgraph_writers(settings: Settings, server: Server, side: Side, *, warm_up: bool) -> Stats:
    """Run ``settings.writers`` writers of refund cycles on one PostgresSaver."""
    writers = settings.writers
    cycles = 1 if warm_up else settings.langgraph_writer_cycles
    with _opener(side, server) as saver:
        graph = refund_builder(side.api).compile(checkpointer=saver)
        writer = refund_writer(graph, side.api, cycles)
        elapsed, checkpoints = concurrently(writers, writer, partial(count_checkpoints, server))
    return {
        "rate": checkpoints / elapsed,
        "units_s": writers * cycles / elapsed,
        "written": checkpoints,
        "wall_s": elapsed,
    }


def raw_payload(writer: int, version: int) -> bytes:
    """A JSON document of :data:`RAW_ROW_BYTES` bytes, distinct per row."""
    head = f'{{"writer": {writer}, "version": {version}, "text": "'
    text = message(writer * 1_000_000 + version, RAW_ROW_BYTES - len(head) - 2)
    return f'{head}{text}"}}'.encode()


def raw_inserts(settings: Settings, server: Server, writers: int, *, warm_up: bool) -> Stats:
    """``writers`` threads, each with its own autocommit connection, one INSERT per row."""
    rows = WARM_UP_STEPS if warm_up else settings.writer_rows

    with raw_table(server) as insert:

        def writer(k: int, ready: Callable[[], None]) -> None:
            key = uuid.uuid4()
            payloads = [raw_payload(k, i) for i in range(rows + 1)]
            with psycopg.connect(server.url, autocommit=True) as conn:
                conn.execute(insert, (key, 0, payloads[0]))
                ready()
                for i in range(1, rows + 1):
                    conn.execute(insert, (key, i, payloads[i]))

        elapsed, _ = concurrently(writers, writer, lambda: 0)
    total = writers * rows
    return {"rate": total / elapsed, "written": total, "wall_s": elapsed}


def _jobs(runner: Runner, server: Server) -> dict[str, Job]:
    settings = runner.settings
    sides = {side.name: side for side in runner.sides if not side.variant}
    jobs: dict[str, Job] = {}
    if HOLDPOINT in sides:
        hold = sides[HOLDPOINT]
        jobs[HOLDPOINT_REFUND] = partial(holdpoint_writers, settings, server, "refund", hold)
        jobs[HOLDPOINT_LOOP] = partial(holdpoint_writers, settings, server, "loop", hold)
    jobs[RAW] = partial(raw_inserts, settings, server, settings.writers)
    jobs[RAW_ONE] = partial(raw_inserts, settings, server, 1)
    if LANGGRAPH in sides:
        jobs[LANGGRAPH_REFUND] = partial(langgraph_writers, settings, server, sides[LANGGRAPH])
    return jobs


def _ratio(a: Stats | None, b: Stats | None) -> float | None:
    return a["rate"] / b["rate"] if a and b and b["rate"] else None


def concurrent_writers(runner: Runner) -> CaseResult:
    """Benchmark 5: events/s with concurrent writers on PostgreSQL, vs the raw driver."""
    settings = runner.settings
    n, cycles, steps = settings.writers, settings.writer_cycles, settings.writer_loop_steps
    rows, lg_cycles = settings.writer_rows, settings.langgraph_writer_cycles
    columns = ["writer", "workload", "written per repetition", "per second", "wall (s)"]
    result = CaseResult(
        "writers",
        f"5. {n} concurrent writers on PostgreSQL",
        f"{n} Python threads in one process start together (a barrier; each first runs "
        "one untimed unit of its workload, or opens its connection). Holdpoint: one "
        "shared store object (`open_store`, default pool) on a fresh schema; each thread "
        f"runs {cycles} refund cycles on thread ids of its own, or one {steps}-step loop "
        "thread of its own; events = growth of the store's max notification id. Raw "
        f"baseline: each thread has its own autocommit psycopg connection and inserts "
        f"{rows:,} rows one by one (one transaction per row) into a bare table "
        "`(id uuid, version int, state bytea, PRIMARY KEY (id, version))`, state a "
        f"{RAW_ROW_BYTES}-byte JSON document. LangGraph (context, no target): "
        f"`PostgresSaver.from_conn_string` (one connection, shared by the threads), "
        f"{lg_cycles} refund cycles per thread, default durability; checkpoints = growth "
        f"of its `checkpoints` table. Wall time from the common start to the last "
        f"thread's end; {_reps(settings)}.",
        [Table(columns), Table(["ratio", "value"])],
    )
    units = {
        HOLDPOINT_REFUND: (f"{n} x {cycles} refund cycles", "events", "cycles"),
        HOLDPOINT_LOOP: (f"{n} x 1 loop of {steps} steps", "events", "steps"),
        RAW: (f"{n} x {rows:,} single-row INSERTs", "rows", ""),
        RAW_ONE: (f"1 x {rows:,} single-row INSERTs", "rows", ""),
        LANGGRAPH_REFUND: (f"{n} x {lg_cycles} refund cycles", "checkpoints", "cycles"),
    }
    descriptions = {
        HOLDPOINT_REFUND: f"{n} writers, refund cycles: Holdpoint events/s / raw rows/s",
        HOLDPOINT_LOOP: f"{n} writers, loop steps: Holdpoint events/s / raw rows/s",
    }
    reason = runner.skipped("postgres")
    if reason is not None or runner.server is None:
        why = reason or "no PostgreSQL server"
        result.tables[0].rows.append(skipped_row("postgres", why, len(columns) - 2))
        result.tables.pop()
        result.targets += [skipped_target(d, why) for d in descriptions.values()]
        return result
    by_job = runner.alternate("writers", _jobs(runner, runner.server))
    for name, (workload, what, unit) in units.items():
        if name not in by_job:
            continue
        stats = by_job[name]
        if stats is None:
            result.tables[0].rows.append([name, workload, "no result", "", ""])
            continue
        rate = f"{fmt_num(stats['rate'])} {what}/s"
        if unit:
            rate += f"; {fmt_num(stats['units_s'])} {unit}/s"
        result.tables[0].rows.append(
            [name, workload, f"{stats['written']:,.0f} {what}", rate, fmt_num(stats["wall_s"])]
        )
    raw = by_job.get(RAW)
    ratios = result.tables[1].rows
    for name, description in descriptions.items():
        value = _ratio(by_job.get(name), raw)
        ratios.append([description, "n/a" if value is None else fmt_ratio(value)])
        result.targets.append(reported_target(description, value))
    one = _ratio(by_job.get(RAW), by_job.get(RAW_ONE))
    ratios.append([f"raw rows/s, {n} threads / 1 thread", "n/a" if one is None else fmt_ratio(one)])
    hold = by_job.get(HOLDPOINT_REFUND)
    if hold is not None:
        ratios.append(
            [
                "Holdpoint's mean event size (state column) / raw row's state",
                f"{hold['event_bytes']:.0f} B / {RAW_ROW_BYTES} B",
            ]
        )
    return result


def _reps(settings: Settings) -> str:
    n = settings.reps
    return f"median of {n} repetition{'s' if n > 1 else ''}, each on fresh storage"
