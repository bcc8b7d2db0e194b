"""Growth (issue 26, target 4): every other cost, as the log grows.

Measured on the stores of the `kinds` benchmark (logs of refund cycles), after its reads,
with 1,000 threads paused on an interrupt added (the queue): each figure on the largest
logs within `GROWTH_LIMIT` of its figure on the smallest. Costs, so that growth reads the
same way for each: a rate is given as microseconds per event.

A rebuild and verify are timed once per log (seconds each, on the largest). The other
costs are `Read`s: calls of a millisecond or less, which `bench.kinds` times in turns
across the logs, so that the box's drift over the run (minutes between the logs' fills)
falls on every size alike.
"""

from __future__ import annotations

import gc
import itertools
import os
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from bench.backends import scratch_dir
from bench.graphs import Api, refund_builder
from bench.http import holdpoint_server
from bench.postgres import schema_bytes
from bench.projections import build_paused, deep_cursor, settle_store
from bench.report import Table

PAUSED = 1_000  # threads paused on an interrupt: the queue's rows
CYCLES = 30  # refund cycles on new threads, the median counts
READS = 50  # of an old thread, of each page of the queue
STARTS = 5  # of `holdpoint serve`, the median counts
MICROS = 1e6
TURNS = 5  # each log's reads taken in this many turns, the logs in a rotating order


@dataclass(frozen=True)
class Read:
    """A cost whose figure is the median of `calls` samples, each `sample()`'s ms, taken
    in turns after `warm_up` untimed samples a turn."""

    sample: Callable[[], float]
    calls: int
    warm_up: int = 1


def timing(call: Callable[[], object]) -> Callable[[], float]:
    """A sample of `call`: the ms one call takes."""

    def sample() -> float:
        start = time.perf_counter_ns()
        call()
        return (time.perf_counter_ns() - start) / 1e6

    return sample


def growth_measures(
    runner: Any, backend: str, store: Any, url: str, stack: ExitStack
) -> tuple[dict[str, float], dict[str, Read]]:
    """On `store` (a filled log at rest), the costs timed once (us per event) and the
    `Read`s to time in turns, by name; what the reads need stays open on `stack`."""
    from integrity.verify_log import scan_log  # noqa: PLC0415
    from projections.catalog import runner_for  # noqa: PLC0415
    from projections.pending_approvals import PendingApprovals  # noqa: PLC0415

    once: dict[str, float] = {}
    build_paused(store, PAUSED)
    events = store.recorder.max_notification_id() or 0
    runner.progress(f"growth/{backend}: rebuild of {events:,} events")
    projector = runner_for(store)
    stack.callback(projector.close)
    gc.collect()
    start = time.perf_counter()
    projector.rebuild()
    once["rebuild (us/event)"] = (time.perf_counter() - start) * MICROS / events
    settle_store(runner, backend, store, after="the rebuild")
    runner.progress(f"growth/{backend}: verify of {events:,} events")
    gc.collect()
    start = time.perf_counter()
    verdict = scan_log(store).verdict
    once["verify (us/event)"] = (time.perf_counter() - start) * MICROS / events
    if not verdict.ok:
        message = f"verify found problems: {verdict.problems[:3]}"
        raise RuntimeError(message)
    queue = PendingApprovals(projector.db)
    deep = deep_cursor(queue, PAUSED)
    old = "refund-0000000"  # the log's first thread (bench.integrity.refund_cycle)
    reads = {
        "queue, first page (ms)": Read(timing(lambda: queue.page(limit=50)), READS),
        "queue, deep page (ms)": Read(timing(lambda: queue.page(limit=50, after=deep)), READS),
        "get_state's read of an old thread (ms)": Read(timing(lambda: store.thread(old)), READS),
        "refund cycle on a new thread (ms)": Read(timing(_refund_cycle(store)), CYCLES),
        "start-up to /readyz (ms)": Read(_start_up(url), STARTS, warm_up=0),
    }
    return once, reads


def disk_bytes_per_event(runner: Any, backend: str, store: Any, url: str) -> float:
    """The store's bytes on disk (events, read models, indexes) per event of its log."""
    events = store.recorder.max_notification_id() or 1
    if backend == "sqlite":
        path = url.removeprefix("sqlite:///")
        size = sum(os.path.getsize(p) for p in (path, f"{path}-wal") if os.path.exists(p))
        return size / events
    schema = dict(parse_qsl(urlsplit(url).query))["schema"]
    return schema_bytes(runner.server, schema) / events


def _refund_cycle(store: Any) -> Callable[[], None]:
    """One native refund cycle a call, on a new thread of `store`: invoke to the
    interrupt, resume (the graph compiled once)."""
    from domain.graph import END, START, StateGraph  # noqa: PLC0415
    from domain.types import Command, interrupt  # noqa: PLC0415

    graph = refund_builder(Api(StateGraph, START, END, interrupt, Command)).compile(
        checkpointer=store
    )
    threads = (f"growth-{time.time_ns()}-{n}" for n in itertools.count())

    def cycle() -> None:
        config = {"configurable": {"thread_id": next(threads)}}
        graph.invoke({"refund_amount": 250.0, "approved": False}, config)
        done = graph.invoke(Command(resume=True), config)
        if done.get("approved") is not True:
            message = f"refund cycle not approved: {done}"
            raise RuntimeError(message)

    return cycle


def _start_up(url: str) -> Callable[[], float]:
    """A sample of `holdpoint serve` on the store: the ms from its start to `/readyz`
    answering 200 (asked every 10 ms); then it is stopped."""

    def sample() -> float:
        with scratch_dir() as directory:
            start = time.perf_counter()
            with holdpoint_server(url, Path(directory), 0, ready=("/readyz", 0.01)):
                return (time.perf_counter() - start) * 1000

    return sample


def growth_rows(
    table: Table, backend: str, events: int, figures: dict[str, float], base: dict[str, float]
) -> None:
    """A row per figure, with its growth from the smallest log's (`base`)."""
    for name, value in figures.items():
        growth = f"{value / base[name]:.2f}x" if base.get(name) else ""
        table.rows.append([backend, name, f"{events:,}", f"{value:.3f}", growth])
