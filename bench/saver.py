"""HoldpointSaver: LangGraph's own engine on Holdpoint's store, against LangGraph's savers.

Every graph here is a real LangGraph graph (``langgraph.graph.StateGraph``), compiled
once with ``HoldpointSaver`` (``from langgraph.checkpoint.holdpoint import
HoldpointSaver``) on memory, SQLite and PostgreSQL, and once with LangGraph's own
checkpointer of that backend: ``InMemorySaver``, ``SqliteSaver``, ``PostgresSaver``
(LangGraph's side of ``bench/backends.py``, its fresh stores included). All of it runs
in one process, in one run, the checkpointers alternating from one repetition to the
next (``Runner.alternate``).

- Speed: the counter loop (per step) and the refund cycle (per cycle) of
  ``bench/graphs.py``, built with LangGraph's API. Targets: HoldpointSaver's time at
  most LangGraph's saver's on the same backend (SQLite, PostgreSQL); and the saver's
  own cost, its time minus ``InMemorySaver``'s on the same graph in the same run, at
  most half of LangGraph's saver's own cost.
- Storage: a thread that appends one LangChain message per step (``add_messages``),
  bytes on disk on SQLite (target: at most 1/20 of ``SqliteSaver``'s) and, for
  context, ``pg_total_relation_size`` of each side's tables on PostgreSQL.
- ``get_tuple`` at the end of a long thread on a freshly opened SQLite store: flat in
  the thread's length and under 2 ms.
"""

from __future__ import annotations

import importlib
import os
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from time import perf_counter_ns
from typing import TYPE_CHECKING, Annotated, Any, TypedDict

import psycopg
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.graph.message import add_messages

from bench.backends import LANGGRAPH, Side, scratch_dir
from bench.cases import build_loop_thread, loop_once, refund_once
from bench.graphs import Api, GraphBuilder, message, self_loop_builder
from bench.harness import BACKENDS, Job, Runner, Settings, check, fresh_saver
from bench.postgres import LANGGRAPH_TABLES, drop_schema, new_schema_name
from bench.report import (
    CaseResult,
    Metric,
    Stats,
    Table,
    Target,
    ratio_target,
    reported_target,
    skipped_target,
)
from bench.stats import fmt_bytes, fmt_ms, fmt_num, fmt_ratio, median, ms, p95
from service.cpu import pin_threads

if TYPE_CHECKING:
    from pathlib import Path

    from bench.postgres import Server

SAVER = "HoldpointSaver"
SAVER_FULL = "HoldpointSaver, synchronous=full"
BASELINE = "InMemorySaver"
THEIRS = {"memory": BASELINE, "sqlite": "SqliteSaver", "postgres": "PostgresSaver"}
JUDGED = ("sqlite", "postgres")  # in memory, LangGraph's saver is the baseline itself

SPEED_LIMIT = 1.0  # HoldpointSaver's time at most LangGraph's saver's, same backend
COST_LIMIT = 0.5  # its own cost (minus InMemorySaver's) at most half of theirs
STORAGE_LIMIT = 1 / 20
TUPLE_MS_LIMIT = 2.0  # get_tuple at the end of a thread, freshly opened SQLite store
GROWTH_LIMIT = 1.5  # "flat": the longest / the shortest thread's get_tuple median
TUPLE_REPEATS = 5  # get_tuple calls after the first, on the same store object
WARM_UP_STEPS = 20
POOL_WAIT_S = 10.0
THREAD_ID = "long"
ONE_CPU = 0  # the CPU of the loop's one-CPU rows (context)


# -- the checkpointers ---------------------------------------------------------------


def _saver_class() -> Any:
    """``HoldpointSaver``, imported when first used: a side that cannot import it fails
    as a side (the runner records the error), not the whole run."""
    return importlib.import_module("langgraph.checkpoint.holdpoint").HoldpointSaver


def _wait_for_pool(saver: Any) -> None:
    """Wait until a PostgreSQL store's pool has made its connections (not timed), as
    LangGraph's ``PostgresSaver.from_conn_string`` connects before it returns."""
    pool = getattr(getattr(saver.store.recorder, "datastore", None), "pool", None)
    if pool is not None:
        pool.wait(timeout=POOL_WAIT_S)


def holdpoint_saver_sides(api: Api) -> tuple[Side, Side]:
    """HoldpointSaver as a side of ``bench/backends.py`` (LangGraph's API, fresh stores).

    The second is SQLite at ``?synchronous=full`` (an fsync per commit, like
    ``SqliteSaver``), a variant run for context.
    """

    @contextmanager
    def memory() -> Iterator[Any]:
        with _saver_class()() as saver:
            yield saver

    def sqlite_opener(options: str) -> Callable[[Path], Any]:
        @contextmanager
        def sqlite(path: Path) -> Iterator[Any]:
            with _saver_class()(f"sqlite:///{path}{options}") as saver:
                yield saver

        return sqlite

    @contextmanager
    def postgres(server: Server) -> Iterator[Any]:
        schema = new_schema_name()
        try:
            with _saver_class()(server.holdpoint_url(schema)) as saver:
                _wait_for_pool(saver)
                yield saver
        finally:
            drop_schema(server, schema)

    main = Side(SAVER, api, memory, sqlite_opener(""), postgres)
    full = Side(SAVER_FULL, api, memory, sqlite_opener("?synchronous=full"), variant=True)
    return main, full


def _sides(runner: Runner) -> tuple[Side, Side, Side]:
    """LangGraph's side (its own savers), then HoldpointSaver's two, on LangGraph's API."""
    langgraph = next(side for side in runner.sides if side.name == LANGGRAPH)
    return (langgraph, *holdpoint_saver_sides(langgraph.api))


def _checkpointers(langgraph: Side, saver: Side, full: Side) -> list[tuple[str, str, Side]]:
    """(backend, checkpointer, side) in the order the repetitions run them."""
    found = []
    for backend in BACKENDS:
        found += [(backend, THEIRS[backend], langgraph), (backend, SAVER, saver)]
        if backend == "sqlite":
            found.append((backend, SAVER_FULL, full))
    return found


def _key(backend: str, checkpointer: str) -> str:
    return f"{backend}: {checkpointer}"


def _reps(settings: Settings) -> str:
    n = settings.saver_reps
    return f"median of {n} repetition{'s' if n > 1 else ''}, each on a fresh store"


# -- 1. speed: the loop and the refund cycle -------------------------------------------

Once = Callable[..., Stats]  # loop_once, refund_once: (settings, backend, side, *, warm_up, server)


def _own_cost(
    by_key: dict[str, Stats | None], backend: str, checkpointer: str, key: str
) -> float | None:
    """``checkpointer``'s ``key`` minus InMemorySaver's: what the saver itself costs."""
    stats, base = by_key.get(_key(backend, checkpointer)), by_key.get(_key("memory", BASELINE))
    if stats is None or base is None:
        return None
    return stats[key] - base[key]


def _time_target(
    description: str, by_key: dict[str, Stats | None], backend: str, key: str
) -> Target:
    ours, theirs = by_key.get(_key(backend, SAVER)), by_key.get(_key(backend, THEIRS[backend]))
    value = ours[key] / theirs[key] if ours and theirs and theirs[key] else None
    if backend not in JUDGED:
        return reported_target(description, value)
    return ratio_target(description, value, SPEED_LIMIT)


def _cost_target(
    description: str, by_key: dict[str, Stats | None], backend: str, key: str
) -> Target:
    ours = _own_cost(by_key, backend, SAVER, key)
    theirs = _own_cost(by_key, backend, THEIRS[backend], key)
    if ours is None or theirs is None:
        return Target(description, None, "not measured")
    costs = f"{fmt_ms(ours)} vs {fmt_ms(theirs)} ms"
    if theirs <= 0:
        return Target(description, None, f"{costs}: LangGraph's saver cost nothing measurable")
    value = ours / theirs
    return Target(
        description,
        value <= COST_LIMIT,
        f"ratio {fmt_ratio(value)} ({costs}; limit {COST_LIMIT:g})",
    )


def _speed(
    runner: Runner,
    result: CaseResult,
    graph: str,
    once: Once,
    metrics: list[Metric],
    key: str,
) -> None:
    """Run ``once`` with every checkpointer, alternating; add a table and the targets.

    ``key`` is the statistic judged (a time per step or per cycle, in ms).
    """
    settings = runner.settings
    skipped = {backend: runner.skipped(backend) for backend in BACKENDS}
    jobs: dict[str, Job] = {
        _key(backend, name): partial(once, settings, backend, side, server=runner.server)
        for backend, name, side in _checkpointers(*_sides(runner))
        if skipped[backend] is None
    }
    by_key = runner.alternate(f"saver/{graph}", jobs, reps=settings.saver_reps)
    judged = next(m for m in metrics if m.key == key)
    table = Table(
        [
            "graph",
            "backend",
            "checkpointer",
            *(m.header for m in metrics),
            f"own cost: {judged.header} minus InMemorySaver's",
        ]
    )
    for backend in BACKENDS:
        if skipped[backend] is not None:
            reason = f"skipped: {skipped[backend]}"
            table.rows.append([graph, backend, reason, *[""] * (len(metrics) + 1)])
            continue
        names = [n for b, n, _ in _checkpointers(*_sides(runner)) if b == backend]
        for name in names:
            stats = by_key.get(_key(backend, name))
            cost = _own_cost(by_key, backend, name, key)
            cells = [m.fmt(stats[m.key]) if stats else "no result" for m in metrics]
            if name == BASELINE:
                own = "(the baseline)"
            else:
                own = "n/a" if cost is None else fmt_ms(cost)
            table.rows.append([graph, backend, name, *cells, own])
        theirs = by_key.get(_key(backend, THEIRS[backend]))
        for name in names[1:]:
            ours = by_key.get(_key(backend, name))
            ratios = [
                fmt_ratio(ours[m.key] / theirs[m.key])
                if ours and theirs and theirs[m.key]
                else "n/a"
                for m in metrics
            ]
            ours_cost = _own_cost(by_key, backend, name, key)
            theirs_cost = _own_cost(by_key, backend, THEIRS[backend], key)
            cost_ratio = (
                fmt_ratio(ours_cost / theirs_cost)
                if ours_cost is not None and theirs_cost and theirs_cost > 0
                else "n/a"
            )
            table.rows.append(
                [graph, backend, f"ratio {name} / {THEIRS[backend]}", *ratios, cost_ratio]
            )
    result.tables.append(table)

    for backend in BACKENDS:
        theirs_name = THEIRS[backend]
        time_description = f"{graph}, {backend}: {SAVER}'s {judged.header} at most {theirs_name}'s"
        cost_description = (
            f"{graph}, {backend}: {SAVER}'s own cost at most {COST_LIMIT:g} x {theirs_name}'s"
        )
        if backend not in JUDGED:
            time_description = f"{graph}, {backend}: {SAVER} vs {theirs_name} (context)"
        why = skipped[backend]
        if why is not None:
            result.targets.append(skipped_target(time_description, why))
            if backend in JUDGED:
                result.targets.append(skipped_target(cost_description, why))
            continue
        result.targets.append(_time_target(time_description, by_key, backend, key))
        if backend in JUDGED:
            result.targets.append(_cost_target(cost_description, by_key, backend, key))


LOOP_METRICS = [
    Metric("step_ms", "per step (ms)", fmt_ms),
    Metric("run_s", "run (s)", fmt_num),
]
REFUND_METRICS = [
    Metric("median", "per cycle, median (ms)", fmt_ms),
    Metric("p95", "p95 (ms)", fmt_ms),
    Metric("to_interrupt", "to interrupt (ms)", fmt_ms),
    Metric("to_end", "resume→END (ms)", fmt_ms),
    Metric("threads_s", "cycles/s", fmt_num),
]


# -- 1b. the loop on one CPU (context) --------------------------------------------------


@contextmanager
def on_one_cpu(cpu: int = ONE_CPU) -> Iterator[None]:
    """Every thread of this process, and every thread it starts meanwhile, on ``cpu``;
    afterwards every thread on the CPUs the process had (Linux)."""
    before = os.sched_getaffinity(0)
    pin_threads({cpu})
    try:
        yield
    finally:
        pin_threads(before)


def _pinned(once: Once, *args: Any, **kwargs: Any) -> Stats:
    with on_one_cpu():
        return once(*args, **kwargs)


def _one_cpu(runner: Runner, result: CaseResult) -> None:
    """The SQLite loop, both savers with every thread on one CPU: LangGraph saves from
    background threads, and on one CPU Python's hand-overs between them stay in one
    core's caches (context: the targets are judged on the rows above)."""
    description = f"loop, sqlite, on CPU {ONE_CPU}: {SAVER} vs {THEIRS['sqlite']} (context)"
    why = runner.skipped("sqlite") or (
        None if hasattr(os, "sched_setaffinity") else "needs Linux's sched_setaffinity"
    )
    if why is not None:
        result.targets.append(skipped_target(description, why))
        return
    langgraph, saver, _ = _sides(runner)
    settings = runner.settings
    names = (THEIRS["sqlite"], SAVER)
    jobs: dict[str, Job] = {
        name: partial(_pinned, loop_once, settings, "sqlite", side)
        for name, side in zip(names, (langgraph, saver), strict=True)
    }
    by_name = runner.alternate("saver/loop on one CPU", jobs, reps=settings.saver_reps)
    table = Table(["graph", "backend", "checkpointer", *(m.header for m in LOOP_METRICS)])
    for name in names:
        stats = by_name.get(name)
        cells = [m.fmt(stats[m.key]) if stats else "no result" for m in LOOP_METRICS]
        table.rows.append(["loop", f"sqlite, on CPU {ONE_CPU}", name, *cells])
    ours, theirs = by_name.get(SAVER), by_name.get(THEIRS["sqlite"])
    value = ours["step_ms"] / theirs["step_ms"] if ours and theirs and theirs["step_ms"] else None
    table.rows.append(
        [
            "loop",
            f"sqlite, on CPU {ONE_CPU}",
            f"ratio {SAVER} / {THEIRS['sqlite']}",
            *(
                fmt_ratio(ours[m.key] / theirs[m.key])
                if ours and theirs and theirs[m.key]
                else "n/a"
                for m in LOOP_METRICS
            ),
        ]
    )
    result.tables.append(table)
    result.targets.append(reported_target(description, value))


# -- 2. storage: a growing message list ------------------------------------------------


class ChatState(TypedDict):
    """A counter and a LangChain message list, appended to with ``add_messages``."""

    n: int
    messages: Annotated[list[AnyMessage], add_messages]


def chat_loop_builder(api: Api, steps: int, size: int) -> GraphBuilder:
    """The loop of ``bench/graphs.py`` appending one LangChain message per step.

    Messages alternate human and AI; each has ``size`` characters of content and an
    id of its own (``m<step>``), so that two runs store the same bytes.
    """
    end = api.END
    texts = [message(i, size) for i in range(steps)]

    def append(state: ChatState) -> dict[str, Any]:
        n = state["n"]
        kind = HumanMessage if n % 2 == 0 else AIMessage
        return {"n": n + 1, "messages": [kind(content=texts[n], id=f"m{n}")]}

    def route(state: ChatState) -> str:
        return "append" if state["n"] < steps else end

    return self_loop_builder(api, ChatState, "append", append, route)


def _run_chat(builder: GraphBuilder, saver: Any, steps: int) -> int:
    """Run the message loop on ``saver``; return the run time in nanoseconds."""
    config = {"configurable": {"thread_id": "messages"}, "recursion_limit": steps + 10}
    graph = builder.compile(checkpointer=saver)
    t0 = perf_counter_ns()
    out = graph.invoke({"n": 0, "messages": []}, config)
    elapsed = perf_counter_ns() - t0
    count = len(out.get("messages", ()))
    check(ok=count == steps, what="wrong number of messages", got=count)
    return elapsed


def sqlite_sizes(path: Path) -> Stats:
    """Sizes of a closed SQLite store, after ``PRAGMA wal_checkpoint(TRUNCATE)``.

    ``pages``: page_count x page_size (``free``: the free list's share of it);
    ``total``: every file in the store's directory but ``-shm``.
    """
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        pragma = {
            name: int(conn.execute(f"PRAGMA {name}").fetchone()[0])
            for name in ("page_count", "page_size", "freelist_count")
        }
    finally:
        conn.close()
    files = [f for f in path.parent.iterdir() if not f.name.endswith("-shm")]
    wal = path.with_name(path.name + "-wal")
    return {
        "pages": pragma["page_count"] * pragma["page_size"],
        "free": pragma["freelist_count"] * pragma["page_size"],
        "main": path.stat().st_size,
        "wal": wal.stat().st_size if wal.exists() else 0,
        "total": sum(f.stat().st_size for f in files),
    }


def sqlite_storage_once(settings: Settings, side: Side, *, warm_up: bool) -> Stats:
    """Run the message loop on a fresh SQLite file; measure the closed store."""
    steps = WARM_UP_STEPS if warm_up else settings.storage_steps
    builder = chat_loop_builder(side.api, steps, settings.message_size)
    with scratch_dir() as directory:
        path = directory / "bench.db"
        with side.sqlite(path) as saver:
            elapsed = _run_chat(builder, saver, steps)
        sizes = sqlite_sizes(path)
    return {**sizes, "per_step": sizes["total"] / steps, "step_ms": ms(elapsed) / steps}


def postgres_bytes(url: str, schema: str, tables: tuple[str, ...] | None = None) -> float:
    """Sum of ``pg_total_relation_size`` (heap, TOAST, indexes) of the tables in ``schema``
    (only ``tables``, when given) of the database at ``url``."""
    query = (
        "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
        "JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = %s AND c.relkind IN ('r', 'p')"
    )
    params: list[Any] = [schema]
    if tables is not None:
        query += " AND c.relname = ANY(%s)"
        params.append(list(tables))
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(query, params).fetchone()
    return float(row[0]) if row else 0.0


def postgres_storage_once(
    settings: Settings, server: Server, side: Side, *, warm_up: bool
) -> Stats:
    """Run the message loop on fresh PostgreSQL storage; measure its tables."""
    steps = WARM_UP_STEPS if warm_up else settings.storage_steps
    builder = chat_loop_builder(side.api, steps, settings.message_size)
    with fresh_saver(side, "postgres", server) as saver:
        elapsed = _run_chat(builder, saver, steps)
        if side.name == LANGGRAPH:
            total = postgres_bytes(server.langgraph_url, "public", LANGGRAPH_TABLES)
        else:
            total = postgres_bytes(server.url, str(saver.store.env["POSTGRES_SCHEMA"]))
    return {"total": total, "per_step": total / steps, "step_ms": ms(elapsed) / steps}


SQLITE_STORAGE_METRICS = [
    Metric("total", "all files", fmt_bytes),
    Metric("pages", "page_count x page_size", fmt_bytes),
    Metric("free", "of which free pages", fmt_bytes),
    Metric("wal", "-wal after checkpoint", fmt_bytes),
    Metric("per_step", "all files, per step", fmt_bytes),
    Metric("step_ms", "run, per step (ms)", fmt_ms),
]
POSTGRES_STORAGE_METRICS = [
    Metric("total", "pg_total_relation_size, all tables", fmt_bytes),
    Metric("per_step", "per step", fmt_bytes),
    Metric("step_ms", "run, per step (ms)", fmt_ms),
]


def _storage_table(
    backend: str, by_key: dict[str, Stats | None], metrics: list[Metric]
) -> tuple[Table, float | None]:
    """Both checkpointers' rows and their ratio; returns the table and the ratio of totals."""
    theirs_name = THEIRS[backend]
    theirs, ours = by_key.get(_key(backend, theirs_name)), by_key.get(_key(backend, SAVER))
    table = Table(["backend", "checkpointer", *(m.header for m in metrics)])
    for name, stats in ((theirs_name, theirs), (SAVER, ours)):
        table.rows.append(
            [backend, name, *(m.fmt(stats[m.key]) if stats else "no result" for m in metrics)]
        )
    table.rows.append(
        [
            backend,
            f"ratio {SAVER} / {theirs_name}",
            *(
                fmt_ratio(ours[m.key] / theirs[m.key])
                if ours and theirs and theirs[m.key]
                else "n/a"
                for m in metrics
            ),
        ]
    )
    value = ours["total"] / theirs["total"] if ours and theirs and theirs["total"] else None
    return table, value


def _storage(runner: Runner, result: CaseResult) -> None:
    settings = runner.settings
    langgraph, saver, _ = _sides(runner)
    jobs: dict[str, Job] = {
        _key("sqlite", "SqliteSaver"): partial(sqlite_storage_once, settings, langgraph),
        _key("sqlite", SAVER): partial(sqlite_storage_once, settings, saver),
    }
    reason = runner.skipped("postgres")
    if runner.server is not None and reason is None:
        pg = partial(postgres_storage_once, settings, runner.server)
        jobs[_key("postgres", "PostgresSaver")] = partial(pg, langgraph)
        jobs[_key("postgres", SAVER)] = partial(pg, saver)
    by_key = runner.alternate("saver/storage", jobs, reps=1)

    table, value = _storage_table("sqlite", by_key, SQLITE_STORAGE_METRICS)
    result.tables.append(table)
    result.targets.append(
        ratio_target(
            "storage, SQLite: bytes on disk at most 1/20 of SqliteSaver's", value, STORAGE_LIMIT
        )
    )
    description = "storage, PostgreSQL: bytes vs PostgresSaver's (context)"
    if reason is not None:
        result.targets.append(skipped_target(description, reason))
        return
    table, value = _storage_table("postgres", by_key, POSTGRES_STORAGE_METRICS)
    result.tables.append(table)
    result.targets.append(reported_target(description, value))


# -- 3. get_tuple at the end of a long thread, freshly opened ---------------------------


def _read_tuple(side: Side, path: Path, length: int) -> tuple[int, list[int]]:
    """Open a new saver on ``path`` (not timed); time ``get_tuple`` there, then again.

    Returns the first call's and the repeats' times (ns).
    """
    config = {"configurable": {"thread_id": THREAD_ID}}
    with side.sqlite(path) as saver:
        t0 = perf_counter_ns()
        found = saver.get_tuple(config)
        first = perf_counter_ns() - t0
        again = []
        for _ in range(TUPLE_REPEATS):
            t0 = perf_counter_ns()
            saver.get_tuple(config)
            again.append(perf_counter_ns() - t0)
    values = found.checkpoint["channel_values"] if found else {}
    check(ok=values.get("n") == length, what="wrong values", got=values)
    return first, again


def get_tuple_once(settings: Settings, side: Side, *, warm_up: bool) -> Stats:
    """Build one loop thread per length, close it; time ``get_tuple`` on new savers.

    The lengths take turns call by call, so that a drift in the machine's speed
    cannot pass for a growth with length. Keys are ``"<length>:<statistic>"``.
    """
    lengths: tuple[int, ...] = settings.state_lengths
    calls = settings.state_calls
    if warm_up:
        lengths, calls = (WARM_UP_STEPS,), 2
    stats: Stats = {}
    with scratch_dir() as directory:
        built = {n: build_loop_thread(side, directory / f"{n}.db", n) for n in lengths}
        times: dict[int, list[tuple[int, list[int]]]] = {n: [] for n in lengths}
        for _ in range(calls):
            for n in lengths:
                times[n].append(_read_tuple(side, directory / f"{n}.db", n))
    for n, reads in times.items():
        first = [ms(t) for t, _ in reads]
        stats[f"{n}:first"] = median(first)
        stats[f"{n}:first_p95"] = p95(first)
        stats[f"{n}:again"] = median([ms(t) for _, again in reads for t in again])
        stats[f"{n}:build_step_ms"] = ms(built[n][2]) / n
    return stats


TUPLE_METRICS = [
    Metric("first", "get_tuple, fresh store, median (ms)", fmt_ms),
    Metric("first_p95", "p95 (ms)", fmt_ms),
    Metric("again", "repeats, same store, median (ms)", fmt_ms),
    Metric("build_step_ms", "building the thread, per step (ms)", fmt_ms),
]


def _get_tuple(runner: Runner, result: CaseResult) -> None:
    settings = runner.settings
    langgraph, saver, _ = _sides(runner)
    jobs: dict[str, Job] = {
        "SqliteSaver": partial(get_tuple_once, settings, langgraph),
        SAVER: partial(get_tuple_once, settings, saver),
    }
    by_name = runner.alternate("saver/get_tuple", jobs, reps=1)
    table = Table(["steps", "checkpointer", *(m.header for m in TUPLE_METRICS)])
    for length in settings.state_lengths:
        for name, stats in by_name.items():
            cells = [
                m.fmt(stats[f"{length}:{m.key}"]) if stats else "no result" for m in TUPLE_METRICS
            ]
            table.rows.append([f"{length:,}", name, *cells])
    short, long_ = settings.state_lengths
    growth = Table(["checkpointer", f"get_tuple, fresh store, median, {long_:,} / {short:,} steps"])
    for name, stats in by_name.items():
        value = stats[f"{long_}:first"] / stats[f"{short}:first"] if stats else None
        growth.rows.append([name, "n/a" if value is None else fmt_ratio(value)])
    result.tables += [table, growth]
    ours = by_name.get(SAVER)
    for length in settings.state_lengths:
        first = ours[f"{length}:first"] if ours else None
        result.targets.append(
            Target(
                f"get_tuple, SQLite, {length:,} steps, fresh store: median under "
                f"{TUPLE_MS_LIMIT:g} ms",
                None if first is None else first < TUPLE_MS_LIMIT,
                "not measured"
                if ours is None
                else f"{fmt_ms(ours[f'{length}:first'])} ms "
                f"(repeats {fmt_ms(ours[f'{length}:again'])} ms)",
            )
        )
    result.targets.append(
        ratio_target(
            f"get_tuple, SQLite: flat in length ({long_:,} vs {short:,} steps)",
            ours[f"{long_}:first"] / ours[f"{short}:first"] if ours else None,
            GROWTH_LIMIT,
        )
    )


# -- the case ------------------------------------------------------------------------


def saver_case(runner: Runner) -> CaseResult:
    """HoldpointSaver against LangGraph's savers: speed, storage, get_tuple."""
    settings = runner.settings
    steps, threads = settings.loop_steps, settings.threads
    short, long_ = settings.state_lengths
    result = CaseResult(
        "saver",
        "HoldpointSaver vs LangGraph's savers, on real LangGraph graphs",
        "Real LangGraph graphs (`langgraph.graph.StateGraph`, LangGraph's `interrupt` and "
        "`Command`), compiled with `HoldpointSaver` (`from langgraph.checkpoint.holdpoint "
        "import HoldpointSaver`: `HoldpointSaver()` in memory, `HoldpointSaver("
        '"sqlite:///…")`, `HoldpointSaver("postgresql://…?schema=…")`, a new schema per '
        "repetition, its pool's connections made before the run) and with LangGraph's saver "
        "of the same backend (`InMemorySaver`, `SqliteSaver` on one connection after "
        "`setup()`, `PostgresSaver.from_conn_string` after `setup()` in its own database, "
        "tables truncated). Both at LangGraph's default durability (`async`); "
        f"*{SAVER_FULL}* opens the SQLite store with `?synchronous=full` (context). All "
        "checkpointers run in the same run, alternating in order from one repetition to the "
        "next; a warm-up first; `gc.collect()` between repetitions.\n\n"
        f"**Speed.** The {steps:,}-step counter loop of `bench/graphs.py` (`START → inc`, "
        f"`inc → inc` while `n < {steps}`, `recursion_limit={steps + 10}`; per step = run "
        f"time / {steps:,}) and the refund graph (`request_approval` with `interrupt()`, "
        "resumed with `Command(resume=True)`, then `process_refund`; "
        f"{threads:,} cycles per repetition, each on a thread of its own; the per-cycle "
        f"median judged); {_reps(settings)}. A checkpointer's *own cost* is its time minus "
        "`InMemorySaver`'s (the same graph, the same run): what the storage adds to "
        "LangGraph's engine. Targets on SQLite and PostgreSQL: HoldpointSaver's time at most "
        "LangGraph's saver's (ratio ≤ 1), and its own cost at most half of LangGraph's "
        "saver's (ratio of costs ≤ 0.5); in memory the ratio to `InMemorySaver` is context.\n\n"
        f"**Storage.** The loop appending one LangChain message per step "
        f"(`messages: Annotated[list[AnyMessage], add_messages]`; human and AI messages in "
        f"turn, {settings.message_size} characters of content each, ids `m<step>`), "
        f"{settings.storage_steps:,} steps. SQLite: after the saver is closed, `PRAGMA "
        "wal_checkpoint(TRUNCATE)` through a raw sqlite3 connection, then page_count x "
        "page_size and the files (*all files*: every file in the store's directory but "
        "`-shm`; the target uses it). PostgreSQL (context): the sum of "
        "`pg_total_relation_size` (heap, TOAST, indexes) of Holdpoint's tables in its "
        "schema, and of `checkpoints`, `checkpoint_blobs` and `checkpoint_writes`, measured "
        "right after the run. One repetition: the sizes are deterministic.\n\n"
        f"**get_tuple.** The counter loop run to {short:,} and to {long_:,} steps, each on "
        f"its own SQLite file; everything closed, then {settings.state_calls} times, the "
        "two files taking turns: open a new saver on the file (not timed), time "
        '`get_tuple({"configurable": {"thread_id": …}})` (the first call on that saver), '
        f"then {TUPLE_REPEATS} calls more on it (*repeats*). Medians; the target is judged "
        "on the first call.\n\n"
        f"**On one CPU** (context): the loop again on SQLite, {SAVER} and "
        f"{THEIRS['sqlite']} alternating, each run with every thread of the benchmark's "
        f"process on CPU {ONE_CPU} (`sched_setaffinity`; LangGraph's threads started during "
        "the run inherit it), then the process's CPUs given back. LangGraph saves from "
        "background threads; on one CPU Python's hand-overs between them stay in one core's "
        "caches.",
    )
    _speed(runner, result, "loop", loop_once, LOOP_METRICS, "step_ms")
    _one_cpu(runner, result)
    _speed(runner, result, "refund", refund_once, REFUND_METRICS, "median")
    _storage(runner, result)
    _get_tuple(runner, result)
    return result


SAVER_CASES = {"saver": saver_case}
