"""Reads by kind of event (issue 26, Growth): keys and refusals as the log grows.

Start-up's check for keys (`Keyring.has_keys`), `holdpoint keys list`
(`Keyring.list`) and `GET /audit/refusals` (`Keyring.refusals`) read the log by kind
of event. Each is timed on logs of refund cycles of three sizes, with the keys and
refusals recorded after the cycles (the worst case for a scan, which meets them
last), two ways in the same run: through the index of rare kinds
(`persistence.kind_index`), and through the library's query, which scans the log.
Holdpoint only: LangGraph has no keys or refusals.

Then, on the same stores, every other cost the issue names (`bench/growth.py`): a
rebuild's and verify's time per event, the queue's first and deep pages, `get_state`'s
read of an old thread, a refund cycle on a new thread, start-up to `/readyz`; and the
store's bytes on disk per event.
"""

from __future__ import annotations

import gc
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any

from bench.growth import (
    CYCLES,
    PAUSED,
    READS,
    STARTS,
    TURNS,
    Read,
    disk_bytes_per_event,
    growth_measures,
    growth_rows,
    timing,
)
from bench.harness import QUICK, Runner
from bench.integrity import fill
from bench.projections import AT_REST, STORES, fresh_store, settle_store
from bench.report import CaseResult, Table, Target, skipped_row, skipped_target
from bench.stats import fmt_ms, fmt_num, fmt_ratio, median, median_ms

GROWTH_LIMIT = 1.5  # each read at the large log within this of its figure at the small one
KEYS = 3
REFUSALS = 3


@dataclass(frozen=True)
class Sizes:
    logs: tuple[int, ...] = (10_000, 1_000_000, 10_000_000)  # events of refund cycles
    calls: int = 50  # per read, through the index
    scan_calls: int = 5  # per read, by the library's scan


QUICK_SIZES = Sizes(logs=(10_000, 40_000), calls=20, scan_calls=3)


@contextmanager
def scanning(recorder: Any) -> Iterator[None]:
    """The recorder reads by kind with the library's query, as before the index."""
    library: Any = type(recorder).__mro__[1]  # the library's recorder, which ours extends
    recorder.select_notifications = getattr(recorder, "library_notifications", None) or (
        lambda *args, **kwargs: library.select_notifications(recorder, *args, **kwargs)
    )
    try:
        yield
    finally:
        del recorder.select_notifications


def kinds_case(runner: Runner) -> CaseResult:
    """Benchmark: keys and refusals read by kind, on a small log and larger ones."""
    sizes = QUICK_SIZES if runner.settings == QUICK else Sizes()
    small, *larger = sizes.logs
    logs = ", ".join(f"{events:,}" for events in sizes.logs)
    result = CaseResult(
        "kinds",
        "Growth: reads by kind of event (keys, refusals), and every other cost",
        f"Logs of {logs} events of refund cycles (as the verify benchmark "
        f"generates them), then {KEYS} keys made and {REFUSALS} refusals recorded, on a "
        "fresh store each, all kept open for the timed reads. Three reads by kind: "
        "`Keyring.has_keys()` (start-up's check), `Keyring.list()` (`holdpoint keys "
        "list`), `Keyring.refusals(limit=100)` (`GET /audit/refusals`), through the "
        f"library's query (a scan of the log, as before the index; the median of "
        f"{sizes.scan_calls} calls, right after the fill) and through the index of rare "
        f"kinds (the median of {sizes.calls} calls, timed in turns as below). {AT_REST} "
        f"Then, on each store, {PAUSED:,} threads paused on an interrupt are added, and "
        "a rebuild of every read model from zero and `scan_log` (verify, in process, "
        "default workers) are timed once, each in microseconds per event of the whole "
        "log; on PostgreSQL the rebuild's tables then brought to rest as the log was "
        "(untimed: VACUUM (ANALYZE) of every table of the schema and a CHECKPOINT; "
        "`bench.projections.settle_store`); and the store's bytes on disk per event "
        "(SQLite: the file and its WAL; PostgreSQL: every table of the schema with its "
        "indexes), with the read models. Once every log is filled, the short costs are "
        f"timed in {TURNS} turns, each turn over every log in a rotating order (so that "
        "the box's drift over the run, minutes between two fills, falls on every size "
        "alike), the median of all a cost's samples counting: the reads by kind; the "
        "queue's first page and a page at 90% of it (limit 50) and `store.thread` of the "
        f"log's first thread (`get_state`'s read), {READS} calls each; a native refund "
        f"cycle (invoke to the interrupt, resume) on a new thread, {CYCLES}; `holdpoint "
        f"serve` from its start to `/readyz` answering 200 (asked every 10 ms), {STARTS} "
        "starts.",
        [
            Table(["store", "read", "log events", "index ms", "scan ms", "scan / index"]),
            Table(["store", "cost", "log events", "figure", "growth from the smallest log"]),
        ],
    )
    for backend in STORES:
        descriptions = [
            f"{backend}: each read at {large:,} events within {GROWTH_LIMIT}x of {small:,} events'"
            for large in larger
        ]
        reason = runner.skipped(backend)
        if reason is not None:
            result.tables[0].rows.append(skipped_row(backend, reason, 4))
            result.targets += [skipped_target(description, reason) for description in descriptions]
            continue
        figures: dict[tuple[str, int], float] = {}
        costs: dict[tuple[str, int], float] = {}
        runner.attempt(
            f"kinds/{backend}",
            "Holdpoint",
            partial(_measure, runner, backend, sizes, result.tables, figures, costs),
            warm_up=False,
        )
        for large, description in zip(larger, descriptions, strict=True):
            result.targets.append(_growth_target(description, figures, small, large))
        for large in larger:
            description = (
                f"{backend}: every other cost at {large:,} events within {GROWTH_LIMIT}x "
                f"of {small:,} events'"
            )
            result.targets.append(_growth_target(description, costs, small, large, unit=""))
    return result


def _growth_target(
    description: str,
    figures: dict[tuple[str, int], float],
    small: int,
    large: int,
    unit: str = " ms",
) -> Target:
    """The worst read's growth from the `small` log to the `large` one, judged."""
    growth = {
        name: figures[name, large] / figures[name, small]
        for name, events in figures
        if events == small and (name, large) in figures
    }
    if not growth:
        return Target(description, None, "error, see below")
    worst = max(growth, key=lambda name: growth[name])
    return Target(
        description,
        growth[worst] <= GROWTH_LIMIT,
        f"worst {worst}: {fmt_num(growth[worst])}x "
        f"({fmt_ms(figures[worst, large])} vs {fmt_ms(figures[worst, small])}{unit})",
    )


@dataclass
class _Log:
    """One filled log of the run: its figures taken once, and its reads to take in turns."""

    events: int
    scanned: dict[str, float]  # the reads by kind through the library's scan, ms
    once: dict[str, float]  # every other cost taken once
    by_kind: dict[str, Read]  # through the index of rare kinds
    others: dict[str, Read]  # every other cost timed in turns


def _measure(
    runner: Runner,
    backend: str,
    sizes: Sizes,
    tables: list[Table],
    figures: dict[tuple[str, int], float],
    costs: dict[tuple[str, int], float],
    *,
    warm_up: bool,  # noqa: ARG001
) -> dict[str, float]:
    """Fill a log of each size, keep them all open, and time their reads in turns; the
    rows in `tables`, the medians by kind in `figures` and every other cost in `costs`."""
    with ExitStack() as stack:
        logs = [_fill(runner, backend, events, sizes, stack) for events in sizes.logs]
        runner.progress(f"kinds/{backend}: the reads of each log, in {TURNS} turns")
        medians = _in_turns({log.events: log.by_kind | log.others for log in logs})
    for log in logs:
        for name in log.by_kind:
            indexed, scanned = medians[name, log.events], log.scanned[name]
            figures[name, log.events] = indexed
            tables[0].rows.append(
                [
                    backend,
                    name,
                    f"{log.events:,}",
                    fmt_ms(indexed),
                    fmt_ms(scanned),
                    fmt_ratio(scanned / indexed),
                ]
            )
        found = log.once | {name: medians[name, log.events] for name in log.others}
        base = {name: costs.get((name, sizes.logs[0]), 0.0) for name in found}
        growth_rows(tables[1], backend, log.events, found, base)
        costs.update({(name, log.events): value for name, value in found.items()})
    return {}


def _fill(runner: Runner, backend: str, events: int, sizes: Sizes, stack: ExitStack) -> _Log:
    """A fresh store (open on `stack`) with a log of `events`, keys and refusals after it,
    and 1,000 paused threads; its scans, rebuild and verify timed."""
    from domain.access.keyring import Keyring  # noqa: PLC0415

    store, url = stack.enter_context(fresh_store(backend, runner.server))
    runner.progress(f"kinds/{backend}: {events:,} events")
    fill([store], events)
    keyring = Keyring(store)
    for n in range(KEYS):
        keyring.create(f"bench-{n}", "reviewer")
    for n in range(REFUSALS):
        keyring.record_refusal(
            principal=None, action="GET /approvals", reason="no_key", message=f"{n}"
        )
    settle_store(runner, backend, store)
    by_kind: dict[str, Callable[[], object]] = {
        "has_keys (start-up)": keyring.has_keys,
        "list (keys list)": keyring.list,
        "refusals (GET /audit/refusals)": lambda: keyring.refusals(limit=100),
    }
    scanned = {}
    with scanning(store.recorder):
        for name, read in by_kind.items():
            scanned[name] = median_ms(read, sizes.scan_calls)
    once, reads = growth_measures(runner, backend, store, url, stack)
    settle_store(runner, backend, store, after="the measures")
    once["bytes on disk per event"] = disk_bytes_per_event(runner, backend, store, url)
    indexed = {name: Read(timing(read), sizes.calls) for name, read in by_kind.items()}
    return _Log(events, scanned, once, indexed, reads)


def _in_turns(logs: dict[int, dict[str, Read]]) -> dict[tuple[str, int], float]:
    """Each read of each log timed in `TURNS` turns, the logs in a rotating order; the
    median of its samples by (read, log events)."""
    samples: dict[tuple[str, int], list[float]] = defaultdict(list)
    order = list(logs)
    for turn in range(TURNS):
        shift = turn % len(order)
        for events in order[shift:] + order[:shift]:
            for name, read in logs[events].items():
                for _ in range(read.warm_up):
                    read.sample()
                gc.collect()
                samples[name, events] += [read.sample() for _ in range(read.calls // TURNS or 1)]
    return {key: median(values) for key, values in samples.items()}


KINDS_CASES: dict[str, Callable[[Runner], CaseResult]] = {"kinds": kinds_case}
