"""Graphs, recorded histories and table dumps for the read-model tests.

The graphs are small and real: they run on the store under test and record
the same events a served graph records. `record_history` records one of each
kind of thread the read models tell apart, so that a rebuild or a restart has
something of everything to get right. Import as
`from tests.projections.histories import ...` (the repository root is on
sys.path).
"""

from __future__ import annotations

import contextlib
import operator
from dataclasses import replace
from datetime import UTC, datetime
from typing import Annotated, Any, TypedDict

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from domain.access.role_records import record_roles
from domain.access.roles import custom_roles
from domain.assistants.assistants import Assistants
from domain.graph import END, START, CompiledStateGraph, StateGraph
from domain.memory.items import MemoryItems
from domain.oversight.policy_records import record_policy
from domain.oversight.read_log import Read
from domain.oversight.read_logs import ReadLogs
from domain.oversight.suspensions import Suspensions
from domain.privacy.erasure import erase_subject, find_subject
from domain.record.application import Workflows
from domain.retention.policy import RetentionPolicy
from domain.retention.retention import Due, Retention
from domain.retention.scope import ThreadFacts
from domain.schedule.crons import Crons
from domain.types import Command, Interrupt, interrupt
from integrity.sealing import make_seal
from projections.assistant_index import ASSISTANTS
from projections.change_log import CHANGES
from projections.cron_index import CRONS
from projections.database import Database
from projections.decision_register import DECISIONS, QUESTIONS
from projections.memory_items import ITEMS
from projections.oversight_tables import CANCELLATIONS, FLOW_EDITS, INTERRUPTS, REFUSALS
from projections.pending_approvals import COUNTS, QUEUE
from projections.pending_search import TERMS
from projections.read_records import READS
from projections.record_life import HOLDS, INCIDENTS, PURGES
from projections.runner import POSITIONS
from projections.thread_index import THREADS
from service.retention import gathered

REVIEWER = {"id": "rita", "role": "reviewer", "authenticated": True, "via": "test"}


class Request(TypedDict):
    amount: float
    decision: Any


class Out(TypedDict):
    out: Annotated[list, operator.add]


def config(
    thread_id: str, *, metadata: dict[str, Any] | None = None, **configurable: Any
) -> dict[str, Any]:
    cfg: dict[str, Any] = {"configurable": {"thread_id": thread_id, **configurable}}
    if metadata is not None:
        cfg["metadata"] = metadata
    return cfg


def approval_graph(
    store: Workflows, *, name: str = "refund", node: str = "approve", role: str | None = None
) -> CompiledStateGraph:
    """START -> `node` -> END; `node` asks a human about the amount once."""

    def ask(state: Request) -> dict[str, Any]:
        payload = {"question": f"Refund €{state['amount']}?", "amount": state["amount"]}
        return {"decision": interrupt(payload, required_role=role)}

    builder = StateGraph(Request)
    builder.add_node(node, ask)
    builder.add_edge(START, node)
    builder.add_edge(node, END)
    return builder.compile(checkpointer=store, name=name)


def parallel_graph(store: Workflows, *, name: str = "parallel") -> CompiledStateGraph:
    """START -> left, right -> END; both ask in the same superstep."""

    def asking(side: str) -> Any:
        def node(state: Out) -> dict[str, Any]:
            return {"out": [f"{side}={interrupt(f'ask {side}')}"]}

        return node

    builder = StateGraph(Out)
    builder.add_node("left", asking("left"))
    builder.add_node("right", asking("right"))
    builder.add_edge(START, "left")
    builder.add_edge(START, "right")
    builder.add_edge("left", END)
    builder.add_edge("right", END)
    return builder.compile(checkpointer=store, name=name)


def two_questions_graph(store: Workflows, *, name: str = "twice") -> CompiledStateGraph:
    """START -> two -> END; `two` asks "first?", then "second?"."""

    def two(state: Out) -> dict[str, Any]:
        return {"out": [interrupt("first?"), interrupt("second?")]}

    builder = StateGraph(Out)
    builder.add_node("two", two)
    builder.add_edge(START, "two")
    builder.add_edge("two", END)
    return builder.compile(checkpointer=store, name=name)


def pipeline_graph(
    store: Workflows, *, name: str = "pipeline", during: Any = None
) -> CompiledStateGraph:
    """START -> a -> b -> END, no human; `during()` is called while `a` runs."""

    def a(state: Out) -> dict[str, Any]:
        if during is not None:
            during()
        return {"out": ["a"]}

    builder = StateGraph(Out)
    builder.add_node("a", a)
    builder.add_node("b", lambda state: {"out": ["b"]})
    builder.add_edge(START, "a")
    builder.add_edge("a", "b")
    builder.add_edge("b", END)
    return builder.compile(checkpointer=store, name=name)


def failing_graph(
    store: Workflows, broken: list[bool], *, name: str = "flaky"
) -> CompiledStateGraph:
    """START -> work -> END; `work` raises ValueError while `broken[0]` is true."""

    def work(state: Out) -> dict[str, Any]:
        if broken[0]:
            msg = "the ledger is down"
            raise ValueError(msg)
        return {"out": ["worked"]}

    builder = StateGraph(Out)
    builder.add_node("work", work)
    builder.add_edge(START, "work")
    builder.add_edge("work", END)
    return builder.compile(checkpointer=store, name=name)


def ask_for(graph: CompiledStateGraph, thread_id: str, amount: float = 100.0) -> Interrupt:
    """Start `thread_id` on an approval graph; return the interrupt it pauses at."""
    result = graph.invoke({"amount": amount, "decision": None}, config(thread_id))
    [pending] = result["__interrupt__"]
    return pending


def answer(graph: CompiledStateGraph, thread_id: str, resume: Any = True) -> dict[str, Any]:
    return graph.invoke(Command(resume=resume), config(thread_id, actor=REVIEWER))


def checkpoint_before(graph: CompiledStateGraph, thread_id: str, node: str) -> str:
    """The id of the thread's checkpoint whose next node is `node`."""
    for snapshot in graph.get_state_history(config(thread_id)):
        if snapshot.next == (node,):
            return str(snapshot.config["configurable"]["checkpoint_id"])
    msg = f"{thread_id} has no checkpoint before {node}"
    raise AssertionError(msg)


def record_history(store: Workflows, prefix: str = "") -> None:
    """One thread of each kind: answered, pending (with a role, assigned to a
    reviewer), parallel with one answer, cancelled, failed, finished without a
    human, and a fork."""
    refunds = approval_graph(store)
    finance = approval_graph(store, name="payout", role="finance")
    parallel = parallel_graph(store)
    pipeline = pipeline_graph(store)
    flaky = failing_graph(store, [True])

    ask_for(refunds, f"{prefix}answered", 10.0)
    answer(refunds, f"{prefix}answered", True)
    waiting = ask_for(finance, f"{prefix}pending", 20.0)
    store.assign(f"{prefix}pending", waiting.id, REVIEWER["id"], REVIEWER)
    left, _right = parallel.invoke({"out": []}, config(f"{prefix}both"))["__interrupt__"]
    parallel.invoke(Command(resume={left.id: "yes"}), config(f"{prefix}both"))
    ask_for(refunds, f"{prefix}stopped", 30.0)
    store.cancel(f"{prefix}stopped", REVIEWER, "duplicate request")
    with contextlib.suppress(ValueError):
        flaky.invoke({"out": []}, config(f"{prefix}failed"))
    pipeline.invoke({"out": []}, config(f"{prefix}done", metadata={"customer": "acme"}))
    checkpoint = checkpoint_before(refunds, f"{prefix}answered", "approve")
    refunds.invoke(
        None, config(f"{prefix}answered", checkpoint_id=checkpoint, fork_thread_id=f"{prefix}fork")
    )
    record_memory(store, prefix)
    record_crons(store)
    record_assistants(store)
    record_suspensions(store)
    record_reads(store, prefix)
    record_role_changes(store)
    record_policy_changes(store)
    record_retention(store, pipeline, prefix)
    record_erasure(store)


def record_erasure(store: Workflows) -> None:
    """A data subject erased (one of whom nothing was recorded: the log's threads stay
    as they are)."""
    erase_subject(store, find_subject(store, "subject-of-no-thread"), REVIEWER, "Art. 17")


def record_reads(store: Workflows, prefix: str = "") -> None:
    """A reviewer's queue read three times in a window: recorded once, then once more for
    the payload that came in between; and an auditor's read of a thread's timeline."""
    logs = ReadLogs(store)
    queue = Read("queue", "all", "http")
    first = Read("payload", "i-pending", "http", thread_id=f"{prefix}pending", graph_id="payout")
    later = Read("payload", "i-both", "http", thread_id=f"{prefix}both", graph_id="parallel")
    logs.record(REVIEWER, [queue, first])
    logs.record(REVIEWER, [queue, first])
    logs.record(REVIEWER, [queue, first, later])
    auditor = {"id": "audrey", "role": "auditor", "authenticated": True, "via": "test"}
    logs.record(auditor, [Read("timeline", f"{prefix}pending", "ui", thread_id=f"{prefix}pending")])


def record_role_changes(store: Workflows) -> None:
    """A custom role configured, then another added beside it."""
    manager = {"manager": {"permissions": ["read", "queue", "decide"]}}
    record_roles(store, custom_roles(manager), REVIEWER)
    lead = {**manager, "lead": {"permissions": ["read", "audit"]}}
    record_roles(store, custom_roles(lead), REVIEWER)


def record_policy_changes(store: Workflows) -> None:
    """The oversight policy recorded, then changed (a deadline set for one graph)."""
    policy: dict[str, Any] = {"separation_of_duties": True, "graphs": {"payout": {}}}
    record_policy(store, policy, REVIEWER)
    deadline = {"seconds": 600.0, "on_expiry": {"action": "reject", "decision": "reject"}}
    record_policy(store, {**policy, "graphs": {"payout": {"interrupt_deadline": deadline}}}, None)


def record_retention(store: Workflows, pipeline: Any, prefix: str = "") -> None:
    """A retention policy set, changed and retired; a legal hold placed and lifted, one
    left in place; a purge of a thread recorded (its deletes left to the store); and an
    incident opened and closed."""
    retention = Retention(store)
    policy = RetentionPolicy.checked("old", "graph:pipeline", "end", 400, ["completed"])
    retention.set_policy(policy, REVIEWER, "schedule 4.2")
    retention.set_policy(replace(policy, period_days=365), REVIEWER, "schedule 4.3")
    retention.retire_policy("old", REVIEWER, "superseded")
    retention.set_policy(replace(policy, name="current"), REVIEWER, "schedule 5")
    lifted = retention.place_hold("metadata:customer=acme", REVIEWER, "audit 2026")
    retention.lift_hold(lifted, REVIEWER, "audit closed")
    retention.place_hold(f"thread:{prefix}done", REVIEWER, "litigation 17")
    pipeline.invoke({"out": []}, config(f"{prefix}let-go"))
    sealed, _, _ = make_seal(store, Ed25519PrivateKey.generate())  # a purge is made after one
    assert sealed is not None
    head = sealed["position"]
    now = datetime.now(UTC).isoformat()
    facts = ThreadFacts(f"{prefix}let-go", "pipeline", "completed", now, now, {}, 0)
    threads, _ = gathered(store, [Due(facts, datetime.now(UTC), ("current",))], head)
    retention.record_purge(threads, REVIEWER, head)
    incident = retention.next_incident_id()
    bundle = {"thread_id": f"{prefix}done", "file": "b.json", "sha256": "0" * 64}
    retention.record_incident(
        incident, [f"{prefix}done"], "wrong refund", REVIEWER, ["hold-2"], head, [bundle]
    )
    retention.close_incident(incident, "refund reversed", REVIEWER)


def record_suspensions(store: Workflows) -> None:
    """A graph suspended, lifted, suspended again and lifted again."""
    suspensions = Suspensions(store)
    for _ in range(2):
        suspensions.suspend("pipeline", REVIEWER, "checking its refunds")
        suspensions.lift("pipeline", REVIEWER, "checked")


def record_assistants(store: Workflows) -> None:
    """Assistants: one changed twice and set back to its first version, one deleted."""
    assistants = Assistants(store)
    kept = assistants.create(graph_id="pipeline", actor=REVIEWER, context={"tier": "gold"})
    assistants.update(kept.assistant_id, {"name": "Gold"}, REVIEWER)
    assistants.update(kept.assistant_id, {"metadata": {"team": "ops"}}, REVIEWER)
    assistants.set_latest(kept.assistant_id, 1, REVIEWER)
    gone = assistants.create(graph_id="pipeline", actor=REVIEWER)
    assistants.delete(gone.assistant_id, REVIEWER)


def record_crons(store: Workflows) -> None:
    """Crons: one fired twice, one changed, one deleted."""
    crons, payload = Crons(store), {"input": {"out": []}}
    fired = crons.schedule(
        graph_id="pipeline", thread_id=None, schedule="0 * * * *", payload=payload, actor=REVIEWER
    )
    for _ in range(2):
        due = crons.get(fired.cron_id).next_due()
        assert due is not None
        firing = crons.fire(fired.cron_id, due)
    assert firing is not None
    crons.recover(fired.cron_id, firing.run_id, REVIEWER)  # as if its run never started
    changed = crons.schedule(
        graph_id="pipeline", thread_id="done", schedule="0 9 * * *", payload=payload, actor=REVIEWER
    )
    crons.update(changed.cron_id, {"schedule": "30 9 * * mon-fri"}, REVIEWER)
    gone = crons.schedule(
        graph_id="pipeline", thread_id=None, schedule="0 0 1 * *", payload=payload, actor=REVIEWER
    )
    crons.delete(gone.cron_id, REVIEWER)


def record_memory(store: Workflows, prefix: str = "") -> None:
    """Memory store items: one changed, one deleted, one deleted and written again."""
    items, user = MemoryItems(store), ["users", f"{prefix}u-1"]
    items.put(user, "prefs", {"theme": "dark"}, REVIEWER)
    items.put(user, "prefs", {"theme": "light"}, REVIEWER)
    items.put(user, "gone", {"n": 1}, REVIEWER)
    items.delete(user, "gone", REVIEWER)
    items.put(["teams", f"{prefix}t-1"], "back", {"n": 1}, REVIEWER)
    items.delete(["teams", f"{prefix}t-1"], "back", REVIEWER)
    items.put(["teams", f"{prefix}t-1"], "back", {"n": 2}, REVIEWER)


# The primary key of the tables whose key is not their first column alone.
COMPOSITE_KEYS = {TERMS: "term, thread_id, interrupt_id"}


def rows(db: Database, table: str) -> list[tuple[Any, ...]]:
    """Every row of `table`, in primary-key order."""
    with db.transaction() as cursor:
        cursor.execute(f"SELECT * FROM {db.table(table)} ORDER BY {COMPOSITE_KEYS.get(table, 1)}")
        return [tuple(row) for row in cursor.fetchall()]


READ_MODEL_TABLES = {
    "pending_approvals": (QUEUE, COUNTS, TERMS),
    "thread_index": (THREADS,),
    "oversight": (INTERRUPTS, CANCELLATIONS, FLOW_EDITS, REFUSALS),
    "memory_items": (ITEMS,),
    "cron_index": (CRONS,),
    "assistant_index": (ASSISTANTS,),
    "change_log": (CHANGES,),
    "decision_register": (DECISIONS, QUESTIONS),
    "read_records": (READS,),
    "record_life": (HOLDS, INCIDENTS, PURGES),
}


def read_models(
    db: Database, names: tuple[str, ...] = ("pending_approvals", "thread_index")
) -> dict[str, list[tuple[Any, ...]]]:
    """Full dumps of the named read models' tables (default: the queue and the index)."""
    return {table: rows(db, table) for name in names for table in READ_MODEL_TABLES[name]}


def positions(db: Database) -> dict[str, int]:
    return {name: int(position) for name, position in rows(db, POSITIONS)}


def moment(text: str) -> datetime:
    """A read model's UTC timestamp text as a datetime."""
    return datetime.fromisoformat(text)
