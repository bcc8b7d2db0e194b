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

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any

from bench.growth import PAUSED, disk_bytes_per_event, growth_measures, growth_rows
from bench.harness import QUICK, Runner
from bench.integrity import fill
from bench.projections import AT_REST, STORES, fresh_store, settle_store
from bench.report import CaseResult, Table, Target, skipped_row, skipped_target
from bench.stats import fmt_ms, fmt_num, fmt_ratio, median_ms

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
        "fresh store each. Timed, the median of "
        f"{sizes.calls} calls through the index of rare kinds and of {sizes.scan_calls} "
        "through the library's query (a scan of the log, as before the index), one after "
        "the other in the same run: `Keyring.has_keys()` (start-up's check), "
        "`Keyring.list()` (`holdpoint keys list`), `Keyring.refusals(limit=100)` "
        f"(`GET /audit/refusals`). {AT_REST} Then, on each store, {PAUSED:,} threads "
        "paused on an interrupt are added and every other cost is taken once (second "
        "table): a rebuild of every read model from zero and `scan_log` (verify, in "
        "process, default workers), each in microseconds per event of the whole log; "
        "on PostgreSQL the rebuild's tables then brought to rest as the log was (untimed: "
        "VACUUM (ANALYZE) of every table of the schema and a CHECKPOINT; "
        "`bench.projections.settle_store`); the queue's first page and a page at 90% of "
        "it (limit 50), `store.thread` of the "
        "log's first thread (`get_state`'s read), each the median of 50 calls; a native "
        "refund cycle (invoke to the interrupt, resume) on a new thread, the median of 30; "
        "`holdpoint serve` from its start to `/readyz` answering 200 (asked every 10 ms), "
        "the median of 3 starts; and the store's bytes on disk per event (SQLite: the "
        "file and its WAL; PostgreSQL: every table of the schema with its indexes), with "
        "the read models.",
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
        for events in sizes.logs:
            runner.attempt(
                f"kinds/{backend}/{events}",
                "Holdpoint",
                partial(_measure, runner, backend, events, sizes, result.tables, figures, costs),
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


def _measure(
    runner: Runner,
    backend: str,
    events: int,
    sizes: Sizes,
    tables: list[Table],
    figures: dict[tuple[str, int], float],
    costs: dict[tuple[str, int], float],
    *,
    warm_up: bool,  # noqa: ARG001
) -> dict[str, float]:
    """Time each read on a fresh log of `events`, then every other cost; their rows in
    `tables`, the indexed medians in `figures` and the costs in `costs`."""
    from domain.access.keyring import Keyring  # noqa: PLC0415

    table = tables[0]
    with fresh_store(backend, runner.server) as (store, url):
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
        reads: dict[str, Callable[[], object]] = {
            "has_keys (start-up)": keyring.has_keys,
            "list (keys list)": keyring.list,
            "refusals (GET /audit/refusals)": lambda: keyring.refusals(limit=100),
        }
        for name, read in reads.items():
            indexed = median_ms(read, sizes.calls)
            with scanning(store.recorder):
                scanned = median_ms(read, sizes.scan_calls)
            figures[name, events] = indexed
            table.rows.append(
                [
                    backend,
                    name,
                    f"{events:,}",
                    fmt_ms(indexed),
                    fmt_ms(scanned),
                    fmt_ratio(scanned / indexed),
                ]
            )
        found = growth_measures(runner, backend, store, url)
        settle_store(runner, backend, store, after="the measures")
        found["bytes on disk per event"] = disk_bytes_per_event(runner, backend, store, url)
        base = {name: costs.get((name, sizes.logs[0]), 0.0) for name in found}
        growth_rows(tables[1], backend, events, found, base)
        costs.update({(name, events): value for name, value in found.items()})
    return {}


KINDS_CASES: dict[str, Callable[[Runner], CaseResult]] = {"kinds": kinds_case}
