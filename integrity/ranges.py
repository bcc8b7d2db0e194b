"""Checking one range of the log's positions: the work of one worker process.

Kept lean (no structlog, no application), so that a worker starts fast.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import orjson

from domain.integrity.decodable import StateChecker
from domain.integrity.whole_log import THREAD_TOPICS, RangeCheck, RangeSummary
from integrity.fast_hash import FastHasher
from integrity.scan import Scanner


@dataclass(frozen=True)
class ScanPlan:
    """What a scan gathers besides the checks, for a seal
    (see `domain.integrity.whole_log.RangeCheck`)."""

    leaves_upto: int = 0
    late_after: int | None = None


def thread_id_of(state: bytes) -> str | None:
    """The `thread_id` field of a stored first event, if it has a string one."""
    try:
        value = orjson.loads(state).get("thread_id")
    except (orjson.JSONDecodeError, AttributeError):
        return None
    return value if isinstance(value, str) else None


def check_range(
    scanner: Scanner,
    after: int,
    upto: int,
    plan: ScanPlan,
    progress: Callable[[int], None] | None = None,
) -> RangeSummary:
    """Read and check the rows at positions in (after, upto]."""
    check = RangeCheck(
        after,
        upto,
        FastHasher(),
        leaves_upto=plan.leaves_upto,
        late_after=plan.late_after,
        checker=StateChecker(),
    )
    known: dict[str, str] = {}
    spans = check.summary.spans
    threads = THREAD_TOPICS
    for rows in scanner.batches(after, upto):
        if after:  # threads begun before this range: their ids, from their first events
            begun = {row[1] for row in rows if row[2] == 1}
            wanted = {
                row[1]
                for row in rows
                if row[3] in threads and row[1] not in spans and row[1] not in known
            } - begun
            for aggregate_id, state in scanner.first_events(sorted(wanted)).items():
                thread_id = thread_id_of(state)
                if thread_id is not None:
                    known[aggregate_id] = thread_id
        check.feed(rows, known)
        if progress is not None:
            progress(rows[-1][0])
    return check.finish()
