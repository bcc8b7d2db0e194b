"""The benchmarks: each takes a :class:`Runner`, returns a :class:`CaseResult`."""

from __future__ import annotations

from functools import partial
from time import perf_counter_ns
from typing import TYPE_CHECKING

from bench.backends import HOLDPOINT, LANGGRAPH, Side, scratch_dir, sqlite_bytes
from bench.bare_commit import bare_commit_once
from bench.graphs import (
    Config,
    GraphBuilder,
    loop_builder,
    messages_loop_builder,
    refund_builder,
)
from bench.harness import BACKENDS, Runner, Settings, check, fresh_saver
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
from bench.stats import fmt_bytes, fmt_ms, fmt_num, fmt_ratio, median, ms, p95
from bench.writers import concurrent_writers

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from bench.postgres import Server

SPEED_LIMIT = 0.5  # Holdpoint's time at most 0.5 x LangGraph's
STATE_MS_LIMIT = 2.0  # get_state on a freshly opened store, median
GROWTH_LIMIT = 1.5  # "not growing": longest / shortest thread's get_state median
STORAGE_LIMIT = 1 / 20
# The native engine's step at most this many bare commits (bench/bare_commit.py).
COMMIT_LIMITS: dict[str, float | None] = {"sqlite": 2.0, "postgres": 1.5}
COMMIT = "bare commit (one row)"
CYCLE_COMMITS: dict[str, float | None] = {"sqlite": None, "postgres": None}
WARM_UP_STEPS = 20


def _reps(settings: Settings) -> str:
    n = settings.reps
    return f"median of {n} repetition{'s' if n > 1 else ''}, each on a fresh store"


def compare_on_backends(
    runner: Runner,
    result: CaseResult,
    metrics: list[Metric],
    measure_once: Callable[..., Stats],
    measured: str,
    key: str,
    commit_limits: dict[str, float | None] | None = None,
) -> None:
    """Measure both sides on each backend into ``result``'s first table and targets.

    ``measure_once(settings, backend, side, warm_up=..., server=...)`` is one
    repetition; the target per backend: ``measured`` (statistic ``key``) at most
    0.5 x LangGraph's. A backend this run skips gets a skipped row and target.
    On the backends of ``commit_limits`` a bare commit takes turns with the sides, and
    Holdpoint's ``key`` is judged against it too (None: reported, no limit).
    """
    for backend in BACKENDS:
        description = f"{backend}: {measured} at most 0.5 x LangGraph's"
        reason = runner.skipped(backend)
        if reason is not None:
            result.tables[0].rows.append(skipped_row(backend, reason, len(metrics)))
            result.targets.append(skipped_target(description, reason))
            continue
        measure = partial(measure_once, runner.settings, backend, server=runner.server)
        label = f"{result.name}/{backend}"
        limits = commit_limits or {}
        floored = backend in limits
        commit = partial(bare_commit_once, runner.settings, backend, server=runner.server)
        by_side = runner.compare(
            label,
            measure,
            variants=backend == "sqlite",
            extra={COMMIT: commit} if floored else None,
        )
        result.tables[0].rows += comparison_rows(backend, by_side, metrics)
        result.targets.append(ratio_target(description, ratio(by_side, key), SPEED_LIMIT))
        if floored:
            _commit_rows(result, backend, by_side, metrics, key, limits[backend])


def _commit_rows(
    result: CaseResult,
    backend: str,
    by_side: dict[str, Stats | None],
    metrics: list[Metric],
    key: str,
    limit: float | None,
) -> None:
    """The bare commit's row, Holdpoint's and LangGraph's multiples of it, and the target."""
    commit = by_side.get(COMMIT)
    ms_per_commit = commit["step_ms"] if commit else None
    cells = [m.fmt(commit[m.key]) if commit and m.key in commit else "" for m in metrics]
    rows = result.tables[0].rows
    rows.append([backend, COMMIT, *cells])
    for side, label in ((HOLDPOINT, "ratio H/commit"), (LANGGRAPH, "ratio L/commit")):
        stats = by_side.get(side)
        rows.append(
            [
                backend,
                label,
                *(
                    fmt_ratio(stats[m.key] / ms_per_commit)
                    if stats and ms_per_commit and m.key == key
                    else ""
                    for m in metrics
                ),
            ]
        )
    hold = by_side.get(HOLDPOINT)
    value = hold[key] / ms_per_commit if hold and ms_per_commit else None
    if limit is None:
        result.targets.append(reported_target(f"{backend}: Holdpoint / a bare commit", value))
    else:
        result.targets.append(
            ratio_target(
                f"{backend}: Holdpoint's per step at most {limit:g} x a bare commit", value, limit
            )
        )


def refund_once(
    settings: Settings,
    backend: str,
    side: Side,
    *,
    warm_up: bool,
    server: Server | None = None,
) -> Stats:
    """Run one repetition of the refund cycle on a fresh ``backend`` store."""
    threads = settings.warmup_threads if warm_up else settings.threads
    api = side.api
    per_thread, to_interrupt, to_end = [], [], []
    with fresh_saver(side, backend, server) as saver:
        graph = refund_builder(api).compile(checkpointer=saver)
        start = perf_counter_ns()
        for i in range(threads):
            config = {"configurable": {"thread_id": f"refund-{i}"}}
            t0 = perf_counter_ns()
            paused = graph.invoke({"refund_amount": 250.0, "approved": False}, config)
            t1 = perf_counter_ns()
            done = graph.invoke(api.Command(resume=True), config)
            t2 = perf_counter_ns()
            check(ok="__interrupt__" in paused, what="no interrupt", got=paused)
            check(ok=done.get("approved") is True, what="not approved", got=done)
            per_thread.append(ms(t2 - t0))
            to_interrupt.append(ms(t1 - t0))
            to_end.append(ms(t2 - t1))
        total_s = (perf_counter_ns() - start) / 1e9
    return {
        "median": median(per_thread),
        "p95": p95(per_thread),
        "to_interrupt": median(to_interrupt),
        "to_end": median(to_end),
        "threads_s": threads / total_s,
    }


def refund_cycle(runner: Runner) -> CaseResult:
    """Benchmark 1: the refund human-in-the-loop cycle on many threads."""
    settings = runner.settings
    metrics = [
        Metric("median", "per-thread median (ms)", fmt_ms),
        Metric("p95", "per-thread p95 (ms)", fmt_ms),
        Metric("to_interrupt", "to-interrupt median (ms)", fmt_ms),
        Metric("to_end", "resume→END median (ms)", fmt_ms),
        Metric("threads_s", "threads/s", fmt_num),
    ]
    result = CaseResult(
        "refund",
        f"1. Refund cycle, {settings.threads:,} threads",
        "Seed (a) graph. Per thread: `invoke(input)` until `interrupt()`, then "
        f"`invoke(Command(resume=True))` to END; {settings.threads:,} threads per "
        f"repetition, {_reps(settings)}. threads/s = threads / wall time of the "
        f"repetition. On SQLite and PostgreSQL, *{COMMIT}* takes turns with the sides "
        "as in benchmark 2; *ratio H/commit* is a cycle over one bare commit (Holdpoint "
        "commits a cycle's 8 events in 6 commits).",
        [Table(["backend", "side", *(m.header for m in metrics)])],
    )
    compare_on_backends(
        runner, result, metrics, refund_once, "per-thread median", "median", CYCLE_COMMITS
    )
    return result


def loop_once(
    settings: Settings,
    backend: str,
    side: Side,
    *,
    warm_up: bool,
    server: Server | None = None,
) -> Stats:
    """Run the counter loop once on a fresh ``backend`` store."""
    steps = WARM_UP_STEPS if warm_up else settings.loop_steps
    with fresh_saver(side, backend, server) as saver:
        graph = loop_builder(side.api, steps).compile(checkpointer=saver)
        config = {"configurable": {"thread_id": "loop"}, "recursion_limit": steps + 10}
        t0 = perf_counter_ns()
        out = graph.invoke({"n": 0}, config)
        elapsed = perf_counter_ns() - t0
    check(ok=out.get("n") == steps, what=f"loop did not end at n={steps}", got=out)
    return {"run_s": elapsed / 1e9, "step_ms": ms(elapsed) / steps}


def long_loop(runner: Runner) -> CaseResult:
    """Benchmark 2: one thread looping a counter node ``loop_steps`` times."""
    settings = runner.settings
    steps = settings.loop_steps
    metrics = [
        Metric("run_s", "run (s)", fmt_num),
        Metric("step_ms", "per step (ms)", fmt_ms),
    ]
    result = CaseResult(
        "loop",
        f"2. {steps:,}-step loop",
        f"`START → inc`, conditional edge `inc → inc` while `n < {steps}`, else END; "
        f"`recursion_limit={steps + 10}`. Per step = run time / {steps:,}; "
        f"{_reps(settings)}. The floor beside them, taking turns with them in the same "
        f"run: *{COMMIT}*, {steps:,} rows of 400 bytes inserted and committed one at a "
        "time into a bare table `(id, version, state)` keyed on `(id, version)`, on a "
        "fresh SQLite file in WAL mode with `synchronous=NORMAL` (as Holdpoint's store) "
        "and as autocommit INSERTs on one PostgreSQL connection in a fresh schema "
        "(`bench/bare_commit.py`); *ratio H/commit* is Holdpoint's time per step over it.",
        [Table(["backend", "side", *(m.header for m in metrics)])],
    )
    compare_on_backends(
        runner, result, metrics, loop_once, "per-step time", "step_ms", COMMIT_LIMITS
    )
    return result


def build_loop_thread(side: Side, path: Path, length: int) -> tuple[GraphBuilder, Config, int]:
    """Run the loop graph to ``length`` steps on the SQLite file ``path``.

    Return the builder, the thread's config and the run time in nanoseconds.
    """
    builder = loop_builder(side.api, length)
    config: Config = {"configurable": {"thread_id": "long"}, "recursion_limit": length + 10}
    with side.sqlite(path) as store:
        t0 = perf_counter_ns()
        builder.compile(checkpointer=store).invoke({"n": 0}, config)
        return builder, config, perf_counter_ns() - t0


def read_fresh(
    side: Side, path: Path, builder: GraphBuilder, config: Config, length: int
) -> tuple[int, int]:
    """Open a new store on ``path``; time get_state there, then a second call (ns).

    Opening the store and compiling the builder are not timed; the state read
    must be the end of a ``length``-step thread.
    """
    with side.sqlite(path) as store:
        graph = builder.compile(checkpointer=store)
        t0 = perf_counter_ns()
        snapshot = graph.get_state(config)
        t1 = perf_counter_ns()
        graph.get_state(config)
        t2 = perf_counter_ns()
    check(ok=snapshot.values.get("n") == length, what="wrong values", got=snapshot.values)
    check(ok=not snapshot.next, what="thread not at END", got=snapshot.next)
    return t1 - t0, t2 - t1


def get_state_once(lengths: tuple[int, ...], calls: int, side: Side, *, warm_up: bool) -> Stats:
    """Build one thread per length, then time get_state on freshly opened stores.

    The lengths take turns call by call, so that a drift in the machine's speed
    cannot pass for a growth with length. Keys are ``"<length>:<statistic>"``.
    """
    if warm_up:
        lengths, calls = (WARM_UP_STEPS,), 2
    stats: Stats = {}
    with scratch_dir() as directory:
        threads = {n: build_loop_thread(side, directory / f"{n}.db", n) for n in lengths}
        times: dict[int, list[tuple[int, int]]] = {n: [] for n in lengths}
        for _ in range(calls):
            for n, (builder, config, _) in threads.items():
                times[n].append(read_fresh(side, directory / f"{n}.db", builder, config, n))
    for n, pairs in times.items():
        first = [ms(t) for t, _ in pairs]
        stats[f"{n}:first"] = median(first)
        stats[f"{n}:first_p95"] = p95(first)
        stats[f"{n}:again"] = median([ms(t) for _, t in pairs])
        stats[f"{n}:build_step_ms"] = ms(threads[n][2]) / n
    return stats


def _of_length(by_side: dict[str, Stats | None], length: int) -> dict[str, Stats | None]:
    prefix = f"{length}:"
    return {
        name: {k.removeprefix(prefix): v for k, v in stats.items() if k.startswith(prefix)}
        if stats
        else None
        for name, stats in by_side.items()
    }


def _growth(short: Stats | None, long_: Stats | None) -> float | None:
    return long_["first"] / short["first"] if short and long_ else None


def get_state_fresh(runner: Runner) -> CaseResult:
    """Benchmark 3: get_state at the end of long threads, freshly opened SQLite."""
    short, long_ = runner.settings.state_lengths
    calls = runner.settings.state_calls
    metrics = [
        Metric("first", "get_state, fresh store, median (ms)", fmt_ms),
        Metric("first_p95", "p95 (ms)", fmt_ms),
        Metric("again", "2nd call, same store, median (ms)", fmt_ms),
        Metric("build_step_ms", "building the thread, per step (ms)", fmt_ms),
    ]
    result = CaseResult(
        "get_state",
        "3. get_state at the end of a long thread, freshly opened SQLite store",
        f"The loop graph run to {short:,} and to {long_:,} steps, each on its own SQLite "
        f"file; the stores are closed, then {calls} times, the two files taking turns: "
        "open a new store object on the file and compile the same builder with it "
        "(not timed), time `graph.get_state(config)`, and time a second call on the "
        "same store (context). Medians of the calls; one thread per side and length. "
        "LangGraph's figures are context, not a target.",
        [Table(["steps", "side", *(m.header for m in metrics)])],
    )
    measure = partial(get_state_once, (short, long_), calls)
    by_side = runner.compare("get_state", measure, reps=1)
    by_length = {length: _of_length(by_side, length) for length in (short, long_)}
    for length, stats in by_length.items():
        result.tables[0].rows += comparison_rows(f"{length:,}", stats, metrics)
    growth = Table(["side", f"get_state median, {long_:,} / {short:,} steps"])
    for name in (HOLDPOINT, LANGGRAPH):
        value = _growth(by_length[short].get(name), by_length[long_].get(name))
        growth.rows.append([name, "n/a" if value is None else fmt_ratio(value)])
    result.tables.append(growth)
    for length in (short, long_):
        hold = by_length[length].get(HOLDPOINT)
        result.targets.append(
            Target(
                f"{length:,} steps: Holdpoint's median at most {STATE_MS_LIMIT:g} ms",
                None if hold is None else hold["first"] <= STATE_MS_LIMIT,
                "not measured" if hold is None else f"{fmt_ms(hold['first'])} ms",
            )
        )
    result.targets.append(
        ratio_target(
            f"not growing with length ({long_:,} vs {short:,} steps)",
            _growth(by_length[short].get(HOLDPOINT), by_length[long_].get(HOLDPOINT)),
            GROWTH_LIMIT,
        )
    )
    return result


def storage_once(settings: Settings, side: Side, *, warm_up: bool) -> Stats:
    """Run the message loop on a fresh SQLite file and measure the files."""
    steps = WARM_UP_STEPS if warm_up else settings.storage_steps
    builder = messages_loop_builder(side.api, steps, settings.message_size)
    config = {"configurable": {"thread_id": "messages"}, "recursion_limit": steps + 10}
    with scratch_dir() as directory:
        path = directory / "bench.db"
        with side.sqlite(path) as store:
            graph = builder.compile(checkpointer=store)
            t0 = perf_counter_ns()
            out = graph.invoke({"n": 0, "messages": []}, config)
            elapsed = perf_counter_ns() - t0
        count = len(out.get("messages", ()))
        check(ok=count == steps, what="wrong number of messages", got=count)
        main, wal = sqlite_bytes(path)
        files = [f for f in directory.iterdir() if not f.name.endswith("-shm")]
        total = sum(f.stat().st_size for f in files)
    return {
        "main": main,
        "wal": wal,
        "total": total,
        "per_step": total / steps,
        "step_ms": ms(elapsed) / steps,
    }


def storage(runner: Runner) -> CaseResult:
    """Benchmark 4: bytes on disk for a thread whose message list grows every step."""
    steps, size = runner.settings.storage_steps, runner.settings.message_size
    metrics = [
        Metric("main", "database file", fmt_bytes),
        Metric("wal", "-wal after checkpoint", fmt_bytes),
        Metric("total", "all files", fmt_bytes),
        Metric("per_step", "per step", fmt_bytes),
        Metric("step_ms", "run, per step (ms)", fmt_ms),
    ]
    result = CaseResult(
        "storage",
        f"4. Storage: {steps:,} steps appending one {size}-byte message each",
        "State `messages: Annotated[list, operator.add]`; one distinct "
        f"{size}-character message appended per step, {steps:,} steps, on a SQLite "
        "file. After the store is closed: `PRAGMA wal_checkpoint(TRUNCATE)` through "
        "a raw sqlite3 connection, then the files are measured. *All files* is every "
        "file in the store's directory except `-shm`; the ratio uses it. One "
        "repetition: the sizes are deterministic.",
        [Table(["", "side", *(m.header for m in metrics)])],
    )
    by_side = runner.compare("storage", partial(storage_once, runner.settings), reps=1)
    result.tables[0].rows += comparison_rows("SQLite", by_side, metrics)
    result.targets.append(
        ratio_target(
            "bytes on disk at most 1/20 of LangGraph's",
            ratio(by_side, "total"),
            STORAGE_LIMIT,
        )
    )
    return result


CASES = {
    "refund": refund_cycle,
    "loop": long_loop,
    "get_state": get_state_fresh,
    "storage": storage,
    "writers": concurrent_writers,
}
