"""A store with every kind of event of every aggregate, and one of its rows damaged.

`record_every_kind` records, through the domain's own commands, at least one
event of each class `tests/domain/test_event_topics.py` finds (every aggregate
the domain defines): threads of each kind the read models tell apart, the hold
points' stories with their refused attempts, real LangGraph graphs' threads
(HoldpointSaver), a deadline that passed, a run
taken over, a recursion limit reached, keys made and revoked, and a seal.
`Damage` then edits one stored row the way a disk fault or a careless hand
with SQL would, the append-only triggers dropped first (`tests.integrity.tamper`):
its JSON cut short, its topic renamed to a class that does not exist, or a
field taken out.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, TypedDict

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from eventsourcing.utils import get_topic

from domain.access.identity import ApiKey
from domain.access.keyring import Keyring
from domain.errors import GraphRecursionError
from domain.record.application import Workflows
from domain.record.thread_uuids import thread_uuid
from domain.retention.retention import Retention
from domain.types import interrupt
from integrity.sealing import make_seal
from tests.domain.test_event_topics import event_classes
from tests.graphs import counter_loop_graph, linear_graph
from tests.integrity.tamper import Row, Tamper
from tests.projections.histories import config, failing_graph, record_history
from tests.projections.hold_point_histories import record_hold_points
from tests.saver.langgraph_graphs import record_langgraph_story

EVENT_CLASSES = sorted(event_classes(), key=get_topic)
TOPICS = [get_topic(cls) for cls in EVENT_CLASSES]
ADMIN = {"id": "ada", "role": "admin", "authenticated": True, "via": "test"}


class Slow(TypedDict):
    answer: Any


@dataclass
class Recorded:
    """What `record_every_kind` recorded: its threads, and two keys' raw secrets."""

    threads: list[str]
    victim_key: str  # a reviewer's key, whose KeyCreated is the one damaged
    revoked_key: str  # a key revoked, whose KeyRevoked is the one damaged
    head: int = 0
    thread_of: dict[str, str] = field(default_factory=dict)  # aggregate id (hex) -> thread


def record_every_kind(store: Workflows) -> Recorded:
    """At least one event of every class of every aggregate (`EVENT_CLASSES`)."""
    record_history(store)
    record_hold_points(store, "hp-")
    record_langgraph_story(store)
    keyring = Keyring(store)
    keyring.ensure_bootstrap_keys()
    _, victim = keyring.create("vic", "reviewer", actor=ADMIN, note="its creation is damaged")
    rob, revoked = keyring.create("rob", "reviewer", actor=ADMIN, note="its revocation is")
    keyring.revoke(rob.key_id, actor=ADMIN, reason="left the team")
    _expired(store, "late")
    flaky = failing_graph(store, [True], name="flaky-run")
    with contextlib.suppress(ValueError):
        flaky.invoke({"out": []}, config("taken"))
    thread = store.thread("taken")
    assert thread is not None
    assert thread.run_id is not None
    thread.take_over(thread.run_id, "runner-b", "runner-a", "2026-01-01T00:00:00+00:00", 2)
    store.record(thread)
    store.record_run_cancelled("taken", thread.run_id, ADMIN, "stopped")
    store.update_metadata("taken", {"ticket": "T-9"}, ADMIN)
    with contextlib.suppress(GraphRecursionError):  # "endless": ThreadFailed
        counter_loop_graph(store).invoke({"n": 0}, {**config("endless"), "recursion_limit": 3})
    make_seal(store, Ed25519PrivateKey.generate(), jobs=1)
    starts = store.recorder.select_notifications(start=1, limit=1_000_000)
    purged = {t["thread_id"] for p in Retention(store).purges() for t in p.threads}
    threads = sorted(
        {
            json.loads(n.state)["thread_id"]
            for n in starts
            if n.topic.endswith(("ThreadStarted", "ThreadForked"))
        }
        - purged  # gone from the read models, as the purge's record says
    )
    head = int(store.recorder.max_notification_id() or 0)
    recorded = Recorded(threads, victim, revoked, head)
    recorded.thread_of = {thread_uuid(t).hex: t for t in threads}
    missing = set(TOPICS) - {n.topic for n in starts}
    assert not missing, f"record an event of each of {sorted(missing)} in record_every_kind"
    return recorded


def _expired(store: Workflows, thread_id: str) -> None:
    """A thread whose interrupt's deadline passed, its rule rejecting it (InterruptExpired)."""

    def ask(state: Slow) -> dict[str, Any]:
        return {"answer": interrupt({"question": "In time?"}, deadline=60)}

    result = linear_graph(store, Slow, ask, name="slow").invoke({"answer": None}, config(thread_id))
    [pending] = result["__interrupt__"]
    store.expire(thread_id, pending.id, datetime.now(UTC) + timedelta(minutes=5))


class Damage:
    """One row of a real store's events table, damaged with raw SQL."""

    def __init__(self, url: str, store: Workflows) -> None:
        self.tamper = Tamper(url, store.recorder.events_table_name)  # type: ignore[attr-defined]
        self.tamper.drop_triggers()

    def close(self) -> None:
        self.tamper.close()

    def row_of(self, cls: type, recorded: Recorded) -> Row:
        """The row to damage for an event class: the first of its topic, but for the keys'
        events, those of the keys kept for it (`victim_key`, `revoked_key`)."""
        topic = get_topic(cls)
        rows = [row for row in self.tamper.rows() if row[3] == topic]
        if cls is ApiKey.KeyCreated:
            rows = [row for row in rows if json.loads(row[4])["principal_id"] == "vic"]
        return rows[0]

    def cut_short(self, row: Row) -> None:
        """Its JSON ends early (the thread's id, near the start, is still there)."""
        self.tamper.set_state(row[0], row[4][:-7])

    def rename_topic(self, row: Row) -> None:
        """Its topic names a class that does not exist."""
        self.tamper.execute(
            f"UPDATE {self.tamper.name} SET topic = %s WHERE {self.tamper.position} = %s",
            (row[3] + "Renamed", row[0]),
        )

    def drop_field(self, row: Row, name: str) -> None:
        """One field taken out of its JSON, which stays well-formed."""
        state: dict[str, Any] = json.loads(row[4])
        del state[name]
        self.tamper.set_state(row[0], json.dumps(state, separators=(",", ":")).encode())
