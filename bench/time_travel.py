"""Time-travel benchmarks (issue 6, Performance): reading a long thread's past.

- ``state_at``: the state at a version in the middle of a 10,000-step thread
  (10,004 events on Holdpoint's side), read on a freshly opened store object;
  target: under 5 ms median (Holdpoint starts from the nearest snapshot at or
  before the version and folds only the events after it).
- ``history``: listing the whole history of a 1,000-step thread,
  ``list(graph.get_state_history(config))``; target: at most 0.5 x LangGraph's
  time on the same backend.

Both sides run the loop graph of ``bench/graphs.py``. Reading "on a freshly
opened store" needs a second store object on storage that already holds the
thread, which the fresh checkpointers of ``bench/backends.py`` do not give (they
open empty storage once): :func:`kept_storage` gives a way to open new store
objects on the same storage instead.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from functools import partial
from time import perf_counter_ns
from typing import TYPE_CHECKING, Any
from uuid import UUID

from bench.backends import HOLDPOINT, LANGGRAPH, Side, scratch_dir
from bench.graphs import Config, GraphBuilder, loop_builder
from bench.harness import BACKENDS, Runner, Settings, check
from bench.postgres import drop_schema, new_schema_name, truncate_langgraph
from bench.report import (
    CaseResult,
    Metric,
    Stats,
    Table,
    Target,
    comparison_rows,
    ratio,
    ratio_target,
    reported_target,
    skipped_row,
    skipped_target,
)
from bench.stats import fmt_ms, fmt_num, median, ms

if TYPE_CHECKING:
    from bench.postgres import Server

STATE_AT_MS_LIMIT = 5.0  # state at a version in the middle of the thread, median
HISTORY_LIMIT = 0.5  # Holdpoint's history listing at most 0.5 x LangGraph's
HISTORY_CALLS = 5  # listings per repetition, each on a newly opened store object
WARM_UP_STEPS = 20
POOL_WAIT_S = 10.0
THREAD_ID = "long"
JUDGED = ("sqlite", "postgres")  # memory is context: a store object cannot be reopened

# Holdpoint's events of the loop graph: ThreadStarted, InputReceived, NodeCompleted of
# __start__ (step 0), then one NodeCompleted per step: step s is version s + 3.
FIRST_STEP_VERSION = 3

Opener = Callable[[], AbstractContextManager[Any]]


# -- storage that outlives a store object ------------------------------------


@contextmanager
def _holdpoint_store(url: str) -> Iterator[Any]:
    """Open a Holdpoint store on PostgreSQL, its pool's connections made.

    ``open_store`` opens the pool, whose connections are then made in the
    background; waiting for them keeps their connecting out of the timed read,
    as LangGraph's ``from_conn_string`` connects before it returns.
    """
    from domain.record.store import open_store  # noqa: PLC0415

    store = open_store(url)
    try:
        recorder: Any = store.recorder
        recorder.datastore.pool.wait(timeout=POOL_WAIT_S)
        yield store
    finally:
        store.close()


@contextmanager
def _langgraph_postgres(url: str) -> Iterator[Any]:
    from langgraph.checkpoint.postgres import PostgresSaver  # noqa: PLC0415

    with PostgresSaver.from_conn_string(url) as saver:
        yield saver


@contextmanager
def kept_storage(side: Side, backend: str, server: Server | None) -> Iterator[Opener]:
    """Empty storage of ``backend`` for ``side``; yields an opener of store objects on it.

    Each call of the opener opens a new store object (a new SQLite connection, a
    new PostgreSQL pool or connection) on the same storage. In memory there is
    only one store object: the opener gives it back each time.
    """
    if backend == "memory":
        with side.memory() as saver:
            yield lambda: nullcontext(saver)
        return
    if backend == "sqlite":
        with scratch_dir() as directory:
            yield partial(side.sqlite, directory / "bench.db")
        return
    if server is None:
        message = "no PostgreSQL server"
        raise RuntimeError(message)
    if side.name == LANGGRAPH:
        with _langgraph_postgres(server.langgraph_url) as saver:
            saver.setup()
        truncate_langgraph(server)
        yield partial(_langgraph_postgres, server.langgraph_url)
        return
    schema = new_schema_name()
    try:
        yield partial(_holdpoint_store, server.holdpoint_url(schema))
    finally:
        drop_schema(server, schema)


def run_loop(opener: Opener, side: Side, steps: int) -> tuple[GraphBuilder, Config, int]:
    """Run the loop graph to ``steps`` on a store from ``opener``.

    Return the builder, the thread's config and the run time in nanoseconds.
    """
    builder = loop_builder(side.api, steps)
    config: Config = {"configurable": {"thread_id": THREAD_ID}, "recursion_limit": steps + 10}
    with opener() as store:
        start = perf_counter_ns()
        out = builder.compile(checkpointer=store).invoke({"n": 0}, config)
        elapsed = perf_counter_ns() - start
    check(ok=out.get("n") == steps, what=f"loop did not end at n={steps}", got=out)
    return builder, config, elapsed


def _reps(settings: Settings) -> str:
    n = settings.reps
    return f"median of {n} repetition{'s' if n > 1 else ''}, each on fresh storage"


# -- state at a version --------------------------------------------------------


def positions(steps: int, interval: int) -> dict[str, int]:
    """The steps whose checkpoints are read: start, two in the middle, end.

    "middle" is step ``steps // 2``; "middle+" is the first step from there on
    whose Holdpoint version is the last before a snapshot, so that the read
    folds the most events after its snapshot (``interval - 1``): the worst case
    in the middle. Step -1 is the input's checkpoint.
    """
    middle = steps // 2
    worst = middle + (interval - 1 - (middle + FIRST_STEP_VERSION) % interval) % interval
    return {"start": -1, "middle": middle, "middle+": min(worst, steps), "end": steps}


def _checkpoints(graph: Any, config: Config, wanted: dict[str, int]) -> dict[str, Config]:
    """The config naming each wanted step's checkpoint, from the thread's history."""
    by_step = {
        snapshot.metadata["step"]: snapshot.config for snapshot in graph.get_state_history(config)
    }
    missing = [step for step in wanted.values() if step not in by_step]
    check(ok=not missing, what="steps without a checkpoint", got=missing)
    return {name: by_step[step] for name, step in wanted.items()}


def _expected(step: int) -> int | None:
    return None if step < 0 else step


Prepare = Callable[[Any], Callable[[], Any]]  # store -> a read on it, returning `.values`


def _timed_twice(opener: Opener, prepare: Prepare, step: int) -> tuple[int, int]:
    """Open a store object and prepare the read (not timed); time it, then again (ns)."""
    with opener() as store:
        read = prepare(store)
        start = perf_counter_ns()
        first = read()
        between = perf_counter_ns()
        read()
        end = perf_counter_ns()
    values = first.values
    check(ok=values.get("n") == _expected(step), what=f"wrong values at step {step}", got=values)
    return between - start, end - between


def _get_state(builder: GraphBuilder, at: Config) -> Prepare:
    """``graph.get_state`` at a checkpoint; compiling the builder on the store is not timed."""
    return lambda store: partial(builder.compile(checkpointer=store).get_state, at)


def _state_at_version(version: int) -> Prepare:
    """``domain.history.time_travel.state_at_version``: what the HTTP route and the CLI call."""
    from domain.history.time_travel import state_at_version  # noqa: PLC0415

    return lambda store: partial(state_at_version, store, THREAD_ID, version)


def state_at_once(
    settings: Settings,
    backend: str,
    side: Side,
    *,
    warm_up: bool,
    server: Server | None = None,
) -> Stats:
    """Build one long thread, then time reads of its past on new store objects.

    The positions take turns call by call, so that a drift in the machine's
    speed cannot pass for a difference between positions. Keys are
    ``"<read>:<position>"``, each read timed on a new store object and again
    on the same one (``"<read>+again:<position>"``); Holdpoint also reads by
    version number.
    """
    from domain.record.application import SNAPSHOT_INTERVAL  # noqa: PLC0415

    steps = WARM_UP_STEPS if warm_up else settings.state_lengths[-1]
    calls = 2 if warm_up else settings.state_calls
    wanted = positions(steps, SNAPSHOT_INTERVAL)
    with kept_storage(side, backend, server) as opener:
        builder, config, build_ns = run_loop(opener, side, steps)
        with opener() as store:
            at = _checkpoints(builder.compile(checkpointer=store), config, wanted)
        reads = {
            f"get_state:{name}": _get_state(builder, checkpoint) for name, checkpoint in at.items()
        }
        if side.name == HOLDPOINT:
            for name, checkpoint in at.items():
                version = UUID(checkpoint["configurable"]["checkpoint_id"]).int >> 64
                reads[f"version:{name}"] = _state_at_version(version)
        times: dict[str, list[int]] = {}
        for _ in range(calls):
            for key, prepare in reads.items():
                fresh, again = _timed_twice(opener, prepare, wanted[key.partition(":")[2]])
                read, _, name = key.partition(":")
                times.setdefault(key, []).append(fresh)
                times.setdefault(f"{read}+again:{name}", []).append(again)
    stats = {key: median([ms(t) for t in values]) for key, values in times.items()}
    stats["build_step_ms"] = ms(build_ns) / steps
    return stats


READS = {
    "get_state": "`get_state(checkpoint_id)`, new store object",
    "get_state+again": "the same, again on that store object",
    "version": "`state_at_version`, new store object",
    "version+again": "the same, again on that store object",
}


def _read_rows(backend: str, by_side: dict[str, Stats | None], names: list[str]) -> list[list[str]]:
    rows = []
    for side in (HOLDPOINT, LANGGRAPH):
        stats = by_side.get(side)
        if stats is None:
            rows.append([backend, side, "no result", *([""] * (len(names) + 1))])
            continue
        for read, label in READS.items():
            if f"{read}:start" not in stats:
                continue
            cells = [fmt_ms(stats[f"{read}:{name}"]) for name in names]
            rows.append([backend, side, label, *cells, fmt_ms(stats["build_step_ms"])])
    return rows


def _slowest(stats: Stats, position: str) -> float:
    """Holdpoint's slower read on a new store object at ``position``."""
    return max(stats[f"{read}:{position}"] for read in ("get_state", "version"))


def _state_at_target(backend: str, description: str, stats: Stats | None) -> Target:
    """Judged on the middle version (the issue's figure); the worst spot is in the detail."""
    if stats is None:
        return Target(description, None, "not measured")
    from domain.record.application import SNAPSHOT_INTERVAL  # noqa: PLC0415

    middle, worst = _slowest(stats, "middle"), _slowest(stats, "middle+")
    past = f"{SNAPSHOT_INTERVAL - 1} events past a snapshot"
    detail = f"{fmt_ms(middle)} ms (middle+, {past}: {fmt_ms(worst)} ms)"
    if backend not in JUDGED:
        return Target(description, None, f"{detail}, context", reported=True)
    limit = f"limit {STATE_AT_MS_LIMIT:g} ms"
    return Target(description, middle < STATE_AT_MS_LIMIT, f"{detail}, {limit}")


def state_at_case(runner: Runner) -> CaseResult:
    """Time travel 1: the state at a version in the middle of a long thread."""
    from domain.record.application import SNAPSHOT_INTERVAL  # noqa: PLC0415

    settings = runner.settings
    steps, calls = settings.state_lengths[-1], settings.state_calls
    wanted = positions(steps, SNAPSHOT_INTERVAL)
    names = list(wanted)
    middle, worst = wanted["middle"], wanted["middle+"]
    result = CaseResult(
        "state_at",
        f"Time travel: state at a version of a {steps:,}-step thread, freshly opened store",
        f"The loop graph run to {steps:,} steps on each backend ({steps + 4:,} events on "
        f"Holdpoint's side; a snapshot every {SNAPSHOT_INTERVAL} events); the checkpoints "
        "of four steps are picked from the thread's history (not timed): *start* (the "
        f"input), *middle* (step {middle:,}), *middle+* (step {worst:,}: the first step from "
        "the middle on whose version is the last before a snapshot, so Holdpoint folds the "
        f"most events after its snapshot, {SNAPSHOT_INTERVAL - 1}) and *end* (step "
        f"{steps:,}). Then {calls} times, the reads and positions taking turns: open a new "
        "store object on the storage and compile the same builder with it (not timed), time "
        "`graph.get_state(config)` with that checkpoint's `checkpoint_id`, then the same "
        "call again on that store object (context); on Holdpoint's side also, likewise, "
        "`domain.history.time_travel.state_at_version` at the same version (what `GET "
        "/threads/{id}/versions/{version}` and `holdpoint state --version` call). Medians "
        "of the calls, in ms; one thread per side and backend. A new store object is a new "
        "SQLite connection, a new PostgreSQL pool (Holdpoint: `open_store`, then a wait until "
        "the pool's connections are made) or connection (LangGraph: `PostgresSaver."
        "from_conn_string`), the connecting not timed: on PostgreSQL the timed read is the "
        "first read on its connection (Holdpoint's pool hands out the connection used last, "
        "which made sure the tables exist, as `open_store` does in any new process; "
        "LangGraph's connection is new), and a server process's first read costs it "
        "several ms of catalog loading on either side; in memory it is the same object each "
        "time (context). The target is judged on Holdpoint's slower read on a new store "
        "object at the middle version; *middle+* is the worst spot of the middle snapshot "
        "interval, in the target's detail; LangGraph's figures are context.",
        [Table(["backend", "side", "read", *names, "building, per step (ms)"])],
    )
    for backend in BACKENDS:
        description = (
            f"{backend}: state at a version in the middle of a {steps + 4:,}-event thread, "
            f"median under {STATE_AT_MS_LIMIT:g} ms"
        )
        reason = runner.skipped(backend)
        if reason is not None:
            result.tables[0].rows.append(skipped_row(backend, reason, len(names) + 2))
            result.targets.append(skipped_target(description, reason))
            continue
        measure = partial(state_at_once, settings, backend, server=runner.server)
        by_side = runner.compare(f"state_at/{backend}", measure, reps=1)
        result.tables[0].rows += _read_rows(backend, by_side, names)
        result.targets.append(_state_at_target(backend, description, by_side.get(HOLDPOINT)))
    return result


# -- history listing -----------------------------------------------------------


def history_once(
    settings: Settings,
    backend: str,
    side: Side,
    *,
    warm_up: bool,
    server: Server | None = None,
) -> Stats:
    """Build a loop thread on fresh storage; time listing its history on new store objects."""
    steps = WARM_UP_STEPS if warm_up else settings.loop_steps
    calls = 1 if warm_up else HISTORY_CALLS
    times = []
    with kept_storage(side, backend, server) as opener:
        builder, config, _ = run_loop(opener, side, steps)
        for _ in range(calls):
            with opener() as store:
                graph: Any = builder.compile(checkpointer=store)
                start = perf_counter_ns()
                history = list(graph.get_state_history(config))
                times.append(perf_counter_ns() - start)
            newest, oldest = history[0].values, history[-1].values
            count = len(history)
            check(ok=count == steps + 2, what="wrong number of checkpoints", got=count)
            check(ok=newest.get("n") == steps, what="wrong newest values", got=newest)
            check(ok=not oldest, what="the oldest checkpoint has values", got=oldest)
    listing = median([ms(t) for t in times])
    return {
        "list_ms": listing,
        "per_checkpoint_us": listing * 1000 / (steps + 2),
    }


def history_case(runner: Runner) -> CaseResult:
    """Time travel 2: listing the whole history of a long thread."""
    settings = runner.settings
    steps = settings.loop_steps
    metrics = [
        Metric("list_ms", "history listing, median (ms)", fmt_ms),
        Metric("per_checkpoint_us", "per checkpoint (µs)", fmt_num),
    ]
    result = CaseResult(
        "history",
        f"Time travel: history of a {steps:,}-step thread",
        f"The loop graph run to {steps:,} steps ({steps + 2:,} checkpoints on both sides); "
        f"then {HISTORY_CALLS} times: open a new store object on the storage and compile "
        "the same builder with it (not timed), time `list(graph.get_state_history(config))` "
        "(every checkpoint as a StateSnapshot, newest first; the count and the newest and "
        f"oldest values checked). Median of the {HISTORY_CALLS} listings per repetition; "
        f"{_reps(settings)}. A new store object is a new SQLite connection, a new "
        "PostgreSQL pool (Holdpoint, its connections made) or connection (LangGraph), the "
        "connecting not timed; in memory it is the same "
        "object each time. The memory figures are context.",
        [Table(["backend", "side", *(m.header for m in metrics)])],
    )
    for backend in BACKENDS:
        description = f"{backend}: history listing at most {HISTORY_LIMIT:g} x LangGraph's"
        if backend not in JUDGED:
            description = f"{backend}: history listing vs LangGraph's (context)"
        reason = runner.skipped(backend)
        if reason is not None:
            result.tables[0].rows.append(skipped_row(backend, reason, len(metrics)))
            result.targets.append(skipped_target(description, reason))
            continue
        measure = partial(history_once, settings, backend, server=runner.server)
        by_side = runner.compare(f"history/{backend}", measure)
        result.tables[0].rows += comparison_rows(backend, by_side, metrics)
        value = ratio(by_side, "list_ms")
        if backend in JUDGED:
            result.targets.append(ratio_target(description, value, HISTORY_LIMIT))
        else:
            result.targets.append(reported_target(description, value))
    return result


TIME_TRAVEL_CASES = {"state_at": state_at_case, "history": history_case}
