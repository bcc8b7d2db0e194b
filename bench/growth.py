"""Growth (issue 26, target 4): every other cost, as the log grows.

Measured on the stores of the `kinds` benchmark (logs of refund cycles), after its reads,
with 1,000 threads paused on an interrupt added (the queue): each figure on the largest
logs within `GROWTH_LIMIT` of its figure on the smallest. Costs, so that growth reads the
same way for each: a rate is given as microseconds per event.
"""

from __future__ import annotations

import gc
import os
import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from bench.backends import scratch_dir
from bench.graphs import Api, refund_builder
from bench.http import holdpoint_server
from bench.postgres import schema_bytes
from bench.projections import build_paused, deep_cursor, settle_store
from bench.report import Table
from bench.stats import median, median_ms

PAUSED = 1_000  # threads paused on an interrupt: the queue's rows
CYCLES = 30  # refund cycles on new threads, the median counts
READS = 50  # of an old thread, of each page of the queue
STARTS = 3  # of `holdpoint serve`, the median counts
MICROS = 1e6


def growth_measures(runner: Any, backend: str, store: Any, url: str) -> dict[str, float]:
    """Each cost on `store` (a filled log at rest), by name: ms, or us per event."""
    from integrity.verify_log import scan_log  # noqa: PLC0415
    from projections.catalog import runner_for  # noqa: PLC0415
    from projections.pending_approvals import PendingApprovals  # noqa: PLC0415

    figures: dict[str, float] = {}
    build_paused(store, PAUSED)
    events = store.recorder.max_notification_id() or 0
    runner.progress(f"growth/{backend}: rebuild of {events:,} events")
    projector = runner_for(store)
    try:
        gc.collect()
        start = time.perf_counter()
        projector.rebuild()
        figures["rebuild (us/event)"] = (time.perf_counter() - start) * MICROS / events
        settle_store(runner, backend, store, after="the rebuild")
        queue = PendingApprovals(projector.db)
        deep = deep_cursor(queue, PAUSED)
        figures["queue, first page (ms)"] = median_ms(lambda: queue.page(limit=50), READS)
        figures["queue, deep page (ms)"] = median_ms(
            lambda: queue.page(limit=50, after=deep), READS
        )
    finally:
        projector.close()
    runner.progress(f"growth/{backend}: verify of {events:,} events")
    gc.collect()
    start = time.perf_counter()
    verdict = scan_log(store).verdict
    figures["verify (us/event)"] = (time.perf_counter() - start) * MICROS / events
    if not verdict.ok:
        message = f"verify found problems: {verdict.problems[:3]}"
        raise RuntimeError(message)
    old = "refund-0000000"  # the log's first thread (bench.integrity.refund_cycle)
    figures["get_state's read of an old thread (ms)"] = median_ms(lambda: store.thread(old), READS)
    figures["refund cycle on a new thread (ms)"] = _refund_cycle_ms(store)
    runner.progress(f"growth/{backend}: start-up to /readyz")
    figures["start-up to /readyz (ms)"] = _start_up_ms(url)
    return figures


def disk_bytes_per_event(runner: Any, backend: str, store: Any, url: str) -> float:
    """The store's bytes on disk (events, read models, indexes) per event of its log."""
    events = store.recorder.max_notification_id() or 1
    if backend == "sqlite":
        path = url.removeprefix("sqlite:///")
        size = sum(os.path.getsize(p) for p in (path, f"{path}-wal") if os.path.exists(p))
        return size / events
    schema = dict(parse_qsl(urlsplit(url).query))["schema"]
    return schema_bytes(runner.server, schema) / events


def growth_rows(
    table: Table, backend: str, events: int, figures: dict[str, float], base: dict[str, float]
) -> None:
    """A row per figure, with its growth from the smallest log's (`base`)."""
    for name, value in figures.items():
        growth = f"{value / base[name]:.2f}x" if base.get(name) else ""
        table.rows.append([backend, name, f"{events:,}", f"{value:.3f}", growth])


def _refund_cycle_ms(store: Any) -> float:
    """The native refund cycle on new threads of `store`: invoke to the interrupt, resume."""
    from domain.graph import END, START, StateGraph  # noqa: PLC0415
    from domain.types import Command, interrupt  # noqa: PLC0415

    graph = refund_builder(Api(StateGraph, START, END, interrupt, Command)).compile(
        checkpointer=store
    )
    suffix = time.time_ns()
    times = []
    for n in range(CYCLES + 1):
        config = {"configurable": {"thread_id": f"growth-{suffix}-{n}"}}
        start = time.perf_counter_ns()
        graph.invoke({"refund_amount": 250.0, "approved": False}, config)
        done = graph.invoke(Command(resume=True), config)
        times.append((time.perf_counter_ns() - start) / 1e6)
        if done.get("approved") is not True:
            message = f"refund cycle not approved: {done}"
            raise RuntimeError(message)
    return median(times[1:])  # the first compiles and warms up


def _start_up_ms(url: str) -> float:
    """`holdpoint serve` on the store, from its start to `/readyz` answering 200."""
    took = []
    for _ in range(STARTS):
        with scratch_dir() as directory:
            start = time.perf_counter()
            with holdpoint_server(url, Path(directory), 0, ready=("/readyz", 0.01)):
                took.append((time.perf_counter() - start) * 1000)
    return median(took)
