"""An index of the log by kind of event, for the kinds that are rare.

Keys, refusals, seals, policies and the like are read by kind (`select_notifications`
with `topics`): without an index each such read scans the whole log, so start-up's
check for keys, `keys list` and `GET /audit/refusals` grew with every step ever
recorded. An index on every event's topic would cost each commit of a step (measured
on SQLite: +7 us per one-event commit, +40%), so the index is partial: it holds the
events of every kind but the frequent ones (`FREQUENT`: a thread's, a read's, a memory
item's, which nothing reads by kind over the whole log), whose commits pay only for
testing its condition (+2 us, within the noise of a one-event commit's 20 us; a step
takes about 135 us). Only a read by kind of rare events uses it, naming the index's own
condition so that the database may.

A store whose index is missing (opened by a role that may not create it, before
`holdpoint db init` ran again) reads as before, by scanning.
"""

from __future__ import annotations

from collections.abc import Sequence

# The kinds of event that a step, a read or a memory write records: not indexed.
FREQUENT = ("domain.thread:", "domain.oversight.read_log:", "domain.memory.item:")


def index_name(table: str) -> str:
    return f"{table}_by_rare_kind"


def rare(topics: Sequence[str]) -> bool:
    """Whether a read of these kinds may use the index: some, and none frequent."""
    return bool(topics) and not any(topic.startswith(FREQUENT) for topic in topics)


def condition() -> str:
    """Which events the index holds, in SQL that SQLite and PostgreSQL read alike; a read
    names it word for word, which is how either database proves the index may serve it."""
    return " AND ".join(f"substr(topic, 1, {len(prefix)}) <> '{prefix}'" for prefix in FREQUENT)


def sqlite_index(table: str) -> str:
    return f"CREATE INDEX IF NOT EXISTS {index_name(table)} ON {table} (topic) WHERE {condition()}"
