"""Recording reads (domain/oversight/read_log.py), once per reader, thing read and window.

A read is recorded in the store, not in a process's memory: several server processes
share one database, and any of them may be killed. Each call reads the reader's log for
the current window (one indexed query) and appends only the reads it does not list yet,
in one event; when it lists them all, nothing is written. So N views of an unchanged
queue by one reviewer in a window write one event, and a view that shows something new
writes one more, with just the new reads. Of two processes appending to the same log at
once, one wins and the other reads the log again (the store's version check): a read is
never listed twice.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from eventsourcing.persistence import IntegrityError

from domain.errors import ReadNotRecordedError
from domain.oversight.read_log import Read, ReadLog, read_log_uuid, window_start
from domain.record.application import Workflows, fold_events
from domain.record.hashing import to_json

DEFAULT_WINDOW_SECONDS = 300
ATTEMPTS = 10  # appends tried while other processes append to the same log first


class ReadLogs:
    """Record who read what, once per window (`window_seconds`, from the epoch)."""

    def __init__(
        self,
        store: Workflows,
        window_seconds: int = DEFAULT_WINDOW_SECONDS,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        if window_seconds < 1:
            msg = f"A read window is at least 1 second, not {window_seconds}"
            raise ValueError(msg)
        self.store = store
        self.window_seconds = window_seconds
        self.clock = clock

    def record(self, actor: dict[str, Any], reads: Sequence[Read]) -> int:
        """Record the reads `actor` has not made yet in this window; how many were new.

        ReadNotRecordedError if other writers kept appending to the same log first.
        """
        if not reads:
            return 0
        actor = to_json(actor, "The actor")
        start = window_start(self.clock(), self.window_seconds)
        wanted = list({read.key: read for read in reversed(reads)}.values())[::-1]
        for _ in range(ATTEMPTS):
            log: ReadLog | None = fold_events(
                None, self.store.events.get(read_log_uuid(actor, start))
            )
            new = [read.json() for read in wanted if log is None or read.key not in log.seen]
            if not new:
                return 0
            if log is None:
                log = ReadLog(
                    actor=actor,
                    window_start=start,
                    window_seconds=self.window_seconds,
                    reads=new,
                )
            else:
                log.trigger_event(ReadLog.MoreReadsRecorded, reads=new)
            try:
                self.store.save(log)
            except IntegrityError:  # another process appended first: read the log again
                continue
            return len(new)
        raise ReadNotRecordedError(str(actor.get("id")), ATTEMPTS)
