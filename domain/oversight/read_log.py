"""Who saw what: reads of payloads, the queue, audit timelines, reports and evidence
exports, as recorded facts (issue 24, Art. 12 and 26(5)).

One aggregate per reader and time window, `ReadLog`, whose id is derived from the
reader and the window's start, so that every process addresses the same one. Its first
event, `ReadsRecorded`, and each later `MoreReadsRecorded` list the reads that were new
to the window; a read already listed records nothing (domain/oversight/read_logs.py).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode
from uuid import NAMESPACE_URL, UUID, uuid5

from eventsourcing.domain import Aggregate

READ_KINDS = ("queue", "payload", "timeline", "report", "export")
CHANNELS = ("http", "ui", "cli")
READ_LOG_NAMESPACE = uuid5(NAMESPACE_URL, "https://holdpoint.dev/read-logs")


@dataclass(frozen=True)
class Read:
    """One thing read: its kind, what it is (an interrupt or thread id, a report's name
    and query, the queue's filters), the thread, interrupt and graph it shows, if any,
    and the channel it was read through."""

    kind: str
    target: str
    via: str
    thread_id: str | None = None
    interrupt_id: str | None = None
    graph_id: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in READ_KINDS or self.via not in CHANNELS:
            msg = f"A read is one of {READ_KINDS} through one of {CHANNELS}, not {self}"
            raise ValueError(msg)

    @property
    def key(self) -> tuple[str, str, str | None, str | None]:
        """What makes two reads the same read: the channel does not."""
        return (self.kind, self.target, self.thread_id, self.interrupt_id)

    def json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "target": self.target,
            "via": self.via,
            "thread_id": self.thread_id,
            "interrupt_id": self.interrupt_id,
            "graph_id": self.graph_id,
        }


def read_target(name: str, query: Mapping[str, object]) -> str:
    """What a read of `name` with `query` names: the query's given values (None and ""
    left out), in a stable order, so that the same read is named the same."""
    given = sorted((key, str(value)) for key, value in query.items() if value not in (None, ""))
    return f"{name}?{urlencode(given)}" if given else name


def read_key(read: dict[str, Any]) -> tuple[str, str, str | None, str | None]:
    """`Read.key` of a recorded read."""
    return (read["kind"], read["target"], read.get("thread_id"), read.get("interrupt_id"))


def window_start(moment: datetime, seconds: int) -> str:
    """The start of the window `moment` falls in (windows of `seconds` from the epoch), as
    ISO 8601 UTC text."""
    epoch = int(moment.timestamp())
    return datetime.fromtimestamp(epoch - epoch % seconds, UTC).isoformat()


def read_log_uuid(actor: dict[str, Any], start: str) -> UUID:
    """The id of a reader's log for the window starting at `start`."""
    return uuid5(READ_LOG_NAMESPACE, json.dumps([actor.get("id"), actor.get("role"), start]))


class ReadLog(Aggregate):
    """One reader's reads in one time window, each listed once."""

    class ReadsRecorded(Aggregate.Created):
        actor: dict[str, Any]
        window_start: str
        window_seconds: int
        reads: list[dict[str, Any]]

    class MoreReadsRecorded(Aggregate.Event):
        reads: list[dict[str, Any]]

        def apply(self, aggregate: Any) -> None:
            aggregate.seen.update(read_key(read) for read in self.reads)

    @staticmethod
    def create_id(actor: dict[str, Any], window_start: str) -> UUID:
        return read_log_uuid(actor, window_start)

    def __init__(
        self,
        actor: dict[str, Any],
        window_start: str,
        window_seconds: int,
        reads: list[dict[str, Any]],
    ) -> None:
        self.actor = actor
        self.window_start = window_start
        self.window_seconds = window_seconds
        self.seen = {read_key(read) for read in reads}
