"""The thread aggregate: one workflow thread, folded from its events.

A thread moves in supersteps. `next` lists the nodes of the open superstep;
each node that finishes records NodeCompleted with its update and its routes.
When every node of the step has finished, the step closes: the updates are
folded into `values` with the recorded reducers (in node-name order, as
LangGraph applies them), the routes and the join barriers give the next
step's nodes, and the closing event is a checkpoint. Reading a thread never
runs user code: everything the fold needs is in the events.

Every attribute is plain JSON data so that snapshots store it as it is.
"""

from __future__ import annotations

import hashlib
from dataclasses import MISSING, fields
from datetime import UTC, datetime, timedelta
from functools import cache, lru_cache
from typing import Any
from uuid import NAMESPACE_URL, UUID, uuid5

from eventsourcing.domain import Aggregate

from domain.errors import (
    ThreadBusyError,
    ThreadCancelledError,
    ThreadInterruptedError,
    UnknownInterruptError,
)
from domain.oversight.hold_points import question_digest, record_digest
from domain.record.hashing import GENESIS_HASH, event_hash
from domain.record.schema import resolve_reducer
from domain.record.topics import keep_topics

THREAD_NAMESPACE = uuid5(NAMESPACE_URL, "https://holdpoint.dev/threads")
START = "__start__"

# Statuses, as LangGraph's server names them where it has a name.
IDLE = "idle"
RUNNING = "running"
INTERRUPTED = "interrupted"
FAILED = "failed"
CANCELLED = "cancelled"


def _due(moment: datetime, seconds: float) -> str:
    return (moment + timedelta(seconds=seconds)).isoformat()


@lru_cache(maxsize=4096)
def thread_uuid(thread_id: str) -> UUID:
    """The aggregate id of a thread: derived, so any process can address it."""
    return uuid5(THREAD_NAMESPACE, thread_id)


def fold_update(
    values: dict[str, Any], update: dict[str, Any], channels: dict[str, str | None]
) -> None:
    """Apply one node's update to `values` in place, key by key."""
    for key, value in update.items():
        if key not in channels:
            continue
        name = channels[key]
        if name is None or key not in values:
            values[key] = value
        else:
            values[key] = resolve_reducer(name)(values[key], value)


@cache
def _defaults(event_class: type) -> dict[str, Any]:
    """The fields an event class gives a default: recorded (and hashed) when not passed."""
    return {f.name: f.default for f in fields(event_class) if f.default is not MISSING}


def _answer(resume: Any, digest: str | None, interrupt_id: str | None) -> dict[str, Any]:
    """An answer waiting for its node: the value, and the question it answered."""
    return {"resume": resume, "digest": digest, "interrupt_id": interrupt_id}


class WorkflowThread(Aggregate):
    """One thread of one graph, as its events tell it.

    Version 2 of its state (snapshots) keeps each waiting answer with the digest of
    the question it answered, who shaped the thread since its last decision, and the
    decisions whose run has not ended (`upcast_v1_v2`).
    """

    class_version = 2

    class Event(Aggregate.Event):
        prev_hash: str
        event_hash: str

        def apply(self, aggregate: Any) -> None:
            self.fold(aggregate)
            aggregate.head_hash = self.event_hash

        def fold(self, thread: WorkflowThread) -> None:
            raise NotImplementedError

    class ThreadStarted(Aggregate.Created):
        thread_id: str
        graph_id: str
        graph_digest: str
        channels: dict[str, str | None]
        initial: dict[str, Any]
        waiting_edges: dict[str, list[str]]
        metadata: dict[str, Any]
        actor: dict[str, Any]
        prev_hash: str
        event_hash: str

        def fold(self, thread: WorkflowThread) -> None:
            """`__init__` has already set the thread up from these fields."""

    class ThreadForked(Aggregate.Created):
        """A new thread that starts as another thread stood at a checkpoint."""

        thread_id: str
        graph_id: str
        graph_digest: str
        channels: dict[str, str | None]
        waiting_edges: dict[str, list[str]]
        metadata: dict[str, Any]
        actor: dict[str, Any]
        source_thread_id: str
        source_version: int
        source_hash: str
        state: dict[str, Any]
        prev_hash: str
        event_hash: str
        run_id: str | None = None  # the run that continues from the fork, if one does

        def fold(self, thread: WorkflowThread) -> None:
            thread.run_id = self.run_id
            thread.values = dict(self.state["values"])
            thread.step = self.state["step"]
            thread.next = list(self.state["next"])
            thread.done = dict(self.state["done"])
            thread.barriers = dict(self.state["barriers"])
            # Answers given to an interrupted node that has not run again yet, each with
            # the question it answered ("bound_answers"); forks recorded before digests
            # carried bare values ("answers"), and before that none.
            if "bound_answers" in self.state:
                thread.answers = {n: list(a) for n, a in self.state["bound_answers"].items()}
            else:
                legacy = self.state.get("answers", {})
                thread.answers = {n: [_answer(v, None, None) for v in a] for n, a in legacy.items()}
            thread.decided = dict(self.state.get("decided", {}))
            thread.shapers = dict(self.state.get("shapers", {}))
            source_starter = self.state.get("started_by")
            if source_starter:
                thread.shapers.setdefault(
                    source_starter,
                    f"started thread {self.source_thread_id!r}, which {self.thread_id!r} "
                    "was forked from",
                )
            thread.forked_from = {
                "thread_id": self.source_thread_id,
                "version": self.source_version,
                "hash": self.source_hash,
            }
            thread._mark_checkpoint(self, "fork")

    def __init__(
        self,
        thread_id: str,
        graph_id: str,
        graph_digest: str,
        channels: dict[str, str | None],
        waiting_edges: dict[str, list[str]],
        metadata: dict[str, Any],
        actor: dict[str, Any],
        event_hash: str,
        initial: dict[str, Any] | None = None,
        **_: Any,
    ) -> None:
        self.thread_id = thread_id
        self.graph_id = graph_id
        self.graph_digest = graph_digest
        self.channels = channels
        self.waiting_edges = waiting_edges
        self.metadata = metadata
        self.started_by = actor
        self.values: dict[str, Any] = dict(initial or {})
        self.step = -2
        self.next: list[str] = []
        self.done: dict[str, dict[str, Any]] = {}
        self.interrupts: dict[str, dict[str, Any]] = {}
        self.answers: dict[str, list[dict[str, Any]]] = {}  # by node, see `_answer`
        # Who sent input or edited the state since a decision last took effect (its node
        # ran with the answer): principal id -> how, in words.
        self.shapers: dict[str, str] = {}
        # Answered interrupts whose run has not ended: they govern the state until it does.
        self.decided: dict[str, dict[str, Any]] = {}
        self.barriers: dict[str, list[str]] = {}
        self.error: dict[str, Any] | None = None
        self.cancelled: dict[str, Any] | None = None
        self.checkpoint: dict[str, Any] | None = None
        self.parent_checkpoint: dict[str, Any] | None = None
        self.run_id: str | None = None
        self.forked_from: dict[str, Any] | None = None
        self.head_hash = event_hash

    # -- reading -------------------------------------------------------

    @property
    def status(self) -> str:
        if self.cancelled is not None:
            return CANCELLED
        if self.interrupts:
            return INTERRUPTED
        if self.error is not None:
            return FAILED
        if self.next:
            return RUNNING
        return IDLE

    def runnable(self) -> list[str]:
        """Nodes of the open step that can run now: not done, not waiting."""
        waiting = {record["node"] for record in self.interrupts.values()}
        return [n for n in self.next if n not in self.done and n not in waiting]

    def pending_nodes(self) -> list[str]:
        return [n for n in self.next if n not in self.done]

    def holds(self) -> dict[str, dict[str, Any]]:
        """The hold points standing, by interrupt id: pending interrupts, and answered ones
        whose run still has nodes to run (domain/oversight/hold_points.py)."""
        held = {
            interrupt_id: {**hold, "state": f"answered: {hold['decision']} by {hold['by']}"}
            for interrupt_id, hold in (self.decided.items() if self.next else ())
        }
        for interrupt_id, record in self.interrupts.items():
            held[interrupt_id] = {**record, "state": "pending"}
        return held

    def shaped_by(self, principal_id: str) -> str | None:
        """How `principal_id` shaped what the thread's next decision is about, if it did:
        started or forked it, or sent input or edited it since the last decision."""
        if self.started_by.get("id") == principal_id:
            return f"{'forked' if self.forked_from else 'started'} thread {self.thread_id!r}"
        return self.shapers.get(principal_id)

    def current_values(self) -> dict[str, Any]:
        """Values with the updates of the open step's finished nodes applied,
        in the schema's key order (as LangGraph shows them)."""
        values = self.values
        if self.done:
            values = dict(values)
            for node in sorted(self.done):
                fold_update(values, self.done[node]["update"], self.channels)
        return self.in_schema_order(values)

    def in_schema_order(self, values: dict[str, Any]) -> dict[str, Any]:
        return {key: values[key] for key in self.channels if key in values}

    def task_id(self, node: str) -> str:
        """The id of `node`'s task in the open step (the same on every re-run)."""
        digest = hashlib.sha1(f"{self.id.hex}:{self.step + 1}:{node}".encode()).hexdigest()
        return f"{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"

    def written_in_open_step(self) -> dict[str, str]:
        """Last-value keys already written in the open step, by node."""
        written: dict[str, str] = {}
        for node, record in self.done.items():
            for key in record["update"]:
                if self.channels.get(key, "") is None:
                    written[key] = node
        return written

    # -- recording -----------------------------------------------------

    @classmethod
    def start(
        cls,
        *,
        thread_id: str,
        graph_id: str,
        graph_digest: str,
        channels: dict[str, str | None],
        initial: dict[str, Any],
        waiting_edges: dict[str, list[str]],
        metadata: dict[str, Any],
        actor: dict[str, Any],
    ) -> WorkflowThread:
        fields = {
            "thread_id": thread_id,
            "graph_id": graph_id,
            "graph_digest": graph_digest,
            "channels": channels,
            "initial": initial,
            "waiting_edges": waiting_edges,
            "metadata": metadata,
            "actor": actor,
        }
        timestamp = datetime.now(UTC)
        digest = event_hash("ThreadStarted", thread_id, 1, timestamp, GENESIS_HASH, fields)
        return cls._create(
            cls.ThreadStarted,
            id=thread_uuid(thread_id),
            timestamp=timestamp,
            prev_hash=GENESIS_HASH,
            event_hash=digest,
            **fields,
        )

    def fork(
        self, new_thread_id: str, actor: dict[str, Any], run_id: str | None = None
    ) -> WorkflowThread:
        """A new thread that starts from this one as it stands, at its checkpoint.

        Pending interrupts are not carried over: the interrupted node runs
        again in the fork and asks anew (or `domain.history.forks` raises them again on
        the fork). Answers already given to a node that has not run again are
        carried over, so that its `interrupt()` calls still match by order.
        """
        assert self.checkpoint is not None, "a thread forks from a checkpoint"
        fields = {
            "thread_id": new_thread_id,
            "graph_id": self.graph_id,
            "graph_digest": self.graph_digest,
            "channels": self.channels,
            "waiting_edges": self.waiting_edges,
            "metadata": self.metadata,
            "actor": actor,
            "source_thread_id": self.thread_id,
            "source_version": self.version,
            "source_hash": self.head_hash,
            "state": {
                "values": self.values,
                "step": self.step,
                "next": self.next,
                "done": self.done,
                "barriers": self.barriers,
                "bound_answers": self.answers,
                "decided": self.decided,
                "shapers": self.shapers,
                "started_by": self.started_by.get("id"),
            },
            "run_id": run_id,
        }
        timestamp = datetime.now(UTC)
        digest = event_hash("ThreadForked", new_thread_id, 1, timestamp, GENESIS_HASH, fields)
        return type(self)._create(
            self.ThreadForked,
            id=thread_uuid(new_thread_id),
            timestamp=timestamp,
            prev_hash=GENESIS_HASH,
            event_hash=digest,
            **fields,
        )

    def _record(
        self, event_class: type[Event], timestamp: datetime | None = None, **fields: Any
    ) -> None:
        """Append one event, chained to the head, recorded at `timestamp` (default: now).
        Fields must be plain JSON; those not given take their class's defaults, which are
        recorded, and so hashed, with the rest."""
        timestamp = timestamp or datetime.now(UTC)
        version = self.version + 1
        defaults = _defaults(event_class)
        if defaults and not defaults.keys() <= fields.keys():
            fields = {**defaults, **fields}
        digest = event_hash(
            event_class.__name__,
            self.thread_id,
            version,
            timestamp,
            self.head_hash,
            fields,
        )
        self.trigger_event(
            event_class,
            timestamp=timestamp,
            prev_hash=self.head_hash,
            event_hash=digest,
            **fields,
        )

    # -- what happens to a thread, each refusing what may not happen -----

    def check_at_rest(self) -> None:
        """ThreadCancelledError, ThreadInterruptedError or ThreadBusyError unless the thread
        may take new input: not cancelled, paused, or in the middle of a run."""
        status = self.status
        if status == CANCELLED:
            raise ThreadCancelledError(self.thread_id)
        if status == INTERRUPTED:
            raise ThreadInterruptedError(self.thread_id, list(self.interrupts))
        if status != IDLE:
            raise ThreadBusyError(self.thread_id, status, self.pending_nodes())

    def receive_input(
        self, run_id: str, update: dict[str, Any], routes: list[str], actor: dict[str, Any]
    ) -> None:
        """A run begins with new input (or a Command's update and goto), which the
        `__start__` task applies at once. Refused, recording nothing, unless the thread
        is at rest (`check_at_rest`)."""
        self.check_at_rest()
        self._record(self.InputReceived, run_id=run_id, input=update, actor=actor)
        self.complete_node(START, update, routes)

    def complete_node(
        self,
        node: str,
        update: dict[str, Any],
        routes: list[str],
        duration_ms: float = 0.0,
        applied: list[dict[str, Any]] | None = None,
    ) -> None:
        """A node of the open step finished: its update, its routes, the answers it got."""
        self._record(
            self.NodeCompleted,
            step=self.step + 1,
            node=node,
            task_id=self.task_id(node),
            update=update,
            routes=routes,
            duration_ms=duration_ms,
            applied=applied,
        )

    def fail_node(self, node: str, error: BaseException) -> None:
        """A node of the open step raised; the step stays open, so it can run again."""
        self._record(
            self.NodeFailed,
            step=self.step + 1,
            node=node,
            error_type=type(error).__name__,
            message=str(error),
        )

    def fail(self, error_type: str, message: str) -> None:
        """The run stopped on an error that belongs to no one node (a recursion limit)."""
        self._record(self.ThreadFailed, step=self.step + 1, error_type=error_type, message=message)

    def complete(self) -> None:
        """The run reached END."""
        self._record(self.ThreadCompleted, step=self.step)

    def edit(
        self,
        values: dict[str, Any],
        actor: dict[str, Any],
        reason: str | None,
        *,
        as_node: str | None = None,
        next_nodes: list[str] | None = None,
        decision: str | None = None,
        separation_of_duties: bool | None = None,
    ) -> None:
        """A human changed the state (as `as_node`, routing to `next_nodes` if given). The
        caller has checked the hold points' rules (domain/oversight/hold_points.py); a cancelled
        thread is refused (ThreadCancelledError), recording nothing."""
        if self.status == CANCELLED:
            raise ThreadCancelledError(self.thread_id)
        self._record(
            self.StateEdited,
            values=values,
            as_node=as_node,
            next=next_nodes,
            actor=actor,
            reason=reason,
            decision=decision,
            separation_of_duties=separation_of_duties,
        )

    def cancel(self, actor: dict[str, Any], reason: str | None) -> None:
        """A human stopped the thread for good; ThreadCancelledError if it already was."""
        if self.status == CANCELLED:
            raise ThreadCancelledError(self.thread_id)
        self._record(self.ThreadCancelled, step=self.step, actor=actor, reason=reason)

    def raise_interrupt(
        self,
        *,
        step: int,
        node: str,
        index: int,
        value: Any,
        policy: dict[str, Any] | None = None,
        reasked: str | None = None,
    ) -> str:
        """Record an interrupt; its id is unique in the thread and stable.

        `reasked`: the interrupt whose answer did not apply, because the node asked
        something else in its place (domain/oversight/hold_points.py)."""
        policy = policy or {}
        seed = f"{self.thread_id}\x1f{self.version + 1}\x1f{node}\x1f{index}"
        interrupt_id = hashlib.sha256(seed.encode()).hexdigest()[:32]
        seconds = policy.get("deadline_seconds")
        raised_at = datetime.now(UTC)  # due by is counted from the event's own time
        due_by = None if seconds is None else _due(raised_at, seconds)
        self._record(
            self.InterruptRaised,
            raised_at,
            step=step,
            node=node,
            interrupt_id=interrupt_id,
            index=index,
            value=value,
            required_role=policy.get("required_role"),
            reason_required=bool(policy.get("reason_required")),
            due_by=due_by,
            on_expiry=None if seconds is None else {**policy["on_expiry"], "seconds": seconds},
            digest=question_digest(value),
            approvals=policy.get("approvals") or 1,
            decision_values=policy.get("decision_values"),
            reasked=reasked,
        )
        return interrupt_id

    def assign(self, interrupt_id: str, reviewer_id: str | None, actor: dict[str, Any]) -> None:
        """Name the reviewer of a pending interrupt (None: no one); UnknownInterruptError,
        recording nothing, when it is not pending."""
        if interrupt_id not in self.interrupts:
            raise UnknownInterruptError(self.thread_id, [interrupt_id], list(self.interrupts))
        self._record(
            self.InterruptAssigned, interrupt_id=interrupt_id, reviewer_id=reviewer_id, actor=actor
        )

    def answer(
        self,
        interrupt_id: str,
        *,
        resume: Any,
        decision: str,
        reason: str | None,
        actor: dict[str, Any],
        idempotency_key: str | None,
        run_id: str,
        separation_of_duties: bool,
    ) -> None:
        """Record an answer to a pending interrupt, bound to the question it answers (the
        payload's digest). An approval short of the approvals the interrupt needs is an
        InterruptApproved, and the interrupt stays pending; any other answer resumes it.
        The caller has checked the answer (domain/oversight/hold_points.py); an interrupt
        that is not pending is refused (UnknownInterruptError), recording nothing."""
        record = self.interrupts.get(interrupt_id)
        if record is None:
            raise UnknownInterruptError(self.thread_id, [interrupt_id], list(self.interrupts))
        digest = record_digest(record)
        needed = record.get("approvals", 1)
        given = len(record.get("approved_by", ())) + 1
        answer = {
            "interrupt_id": interrupt_id,
            "resume": resume,
            "digest": digest,
            "reason": reason,
            "actor": actor,
            "idempotency_key": idempotency_key,
            "run_id": run_id,
            "separation_of_duties": separation_of_duties,
        }
        if decision == "approve" and given < needed:
            self._record(self.InterruptApproved, **answer, approvals=given, needed=needed)
        else:
            self._record(self.InterruptResumed, **answer, decision=decision)

    def expire(self, interrupt_id: str, now: datetime) -> bool:
        """Record that a pending interrupt's deadline passed, and apply its rule.

        Returns False, recording nothing, when the interrupt is no longer
        pending or is not yet due (another worker, or a human, came first).
        """
        record = self.interrupts.get(interrupt_id) or {}
        due_by = record.get("due_by")
        if due_by is None or datetime.fromisoformat(due_by) > now:
            return False
        rule = record["on_expiry"]
        new_due_by = _due(now, rule["seconds"]) if rule["action"] == "escalate" else None
        self._record(
            self.InterruptExpired,
            interrupt_id=interrupt_id,
            due_by=due_by,
            rule=rule,
            new_due_by=new_due_by,
        )
        return True

    def _mark_checkpoint(self, event: Any, source: str) -> None:
        self.parent_checkpoint = self.checkpoint
        self.checkpoint = {
            "version": event.originator_version,
            "hash": event.event_hash,
            "source": source,
            "step": self.step,
            "created_at": event.timestamp.isoformat(),
        }

    def makes_checkpoint(self, event: WorkflowThread.Event) -> bool:
        """Whether applying `event` next would make a checkpoint."""
        if isinstance(event, WorkflowThread.NodeCompleted):
            return all(n in self.done or n == event.node for n in self.next)
        return isinstance(event, WorkflowThread.InputReceived | WorkflowThread.StateEdited)

    # -- events --------------------------------------------------------

    class InputReceived(Event):
        """New input starts a run: the `__start__` task will apply it."""

        run_id: str
        input: dict[str, Any]
        actor: dict[str, Any]

        def fold(self, thread: WorkflowThread) -> None:
            thread.run_id = self.run_id
            thread.error = None
            thread.step += 1
            thread.next = [START]
            thread.done = {}
            thread.decided = {}
            who = str(self.actor.get("id"))
            thread.shapers.setdefault(who, f"sent input to thread {thread.thread_id!r}")
            thread._mark_checkpoint(self, "input")

    class NodeCompleted(Event):
        """A node finished: its update (a delta) and where it routes."""

        step: int
        node: str
        task_id: str
        update: dict[str, Any]
        routes: list[str]
        duration_ms: float
        # The answers its interrupt() calls received, each with the digest of the question
        # the node asked this time: [{"interrupt_id", "digest"}] (None: it received none).
        applied: list[dict[str, Any]] | None = None

        def fold(self, thread: WorkflowThread) -> None:
            thread.done[self.node] = {"update": self.update, "routes": self.routes}
            thread.answers.pop(self.node, None)
            if self.applied and not thread.interrupts:  # the decisions took effect: who
                thread.shapers = {}  # shapes the next question is counted anew
            if all(node in thread.done for node in thread.next):
                thread._close_step(self)

    class NodeFailed(Event):
        """A node raised; the step stays open, so the node can run again."""

        step: int
        node: str
        error_type: str
        message: str

        def fold(self, thread: WorkflowThread) -> None:
            thread.error = {
                "node": self.node,
                "type": self.error_type,
                "message": self.message,
            }

    class InterruptRaised(Event):
        """A node paused for a human; the payload is what the human is shown."""

        step: int
        node: str
        interrupt_id: str
        index: int
        value: Any
        # Added after v1; old events read as None.
        required_role: str | None = None
        due_by: str | None = None
        on_expiry: dict[str, Any] | None = None
        reason_required: bool = False
        # Added with hold points (domain/oversight/hold_points.py); older events read as below.
        digest: str | None = None  # of `value`: the question an answer binds to
        approvals: int = 1  # distinct principals who must approve it
        decision_values: dict[str, Any] | None = None  # what approve / reject resume with
        reasked: str | None = None  # the interrupt whose answer did not apply to this question

        def fold(self, thread: WorkflowThread) -> None:
            for other, record in list(thread.interrupts.items()):
                if record["node"] == self.node and record["index"] == self.index:
                    del thread.interrupts[other]  # the node asked anew
            answers = thread.answers.get(self.node)
            if answers and len(answers) > self.index:
                del answers[self.index :]  # given to questions the node no longer asks
            thread.interrupts[self.interrupt_id] = {
                "node": self.node,
                "index": self.index,
                "value": self.value,
                "step": self.step,
                "raised_at": self.timestamp.isoformat(),
                "required_role": self.required_role,
                "reason_required": self.reason_required,
                "due_by": self.due_by,
                "on_expiry": self.on_expiry,
                "digest": self.digest or question_digest(self.value),
                "approvals": self.approvals,
                "approved_by": [],
                "decision_values": self.decision_values,
            }

    class InterruptExpired(Event):
        """An interrupt's deadline passed: its rule decided it, or escalated it."""

        interrupt_id: str
        due_by: str
        rule: dict[str, Any]
        new_due_by: str | None

        def fold(self, thread: WorkflowThread) -> None:
            if self.rule["action"] == "escalate":
                record = thread.interrupts[self.interrupt_id]
                record["required_role"] = self.rule["role"]
                record["due_by"] = self.new_due_by
                return
            record = thread.interrupts.pop(self.interrupt_id)
            answer = _answer(self.rule["resume"], record_digest(record), self.interrupt_id)
            thread.answers.setdefault(record["node"], []).append(answer)
            thread._decided(self.interrupt_id, record, self.rule["decision"], "its deadline")
            thread.error = None

    class InterruptResumed(Event):
        """A human answered an interrupt; the node will run again with it.

        Version 2 calls the answer `resume`, as `Command(resume=...)` and the
        HTTP API do; version 1 called it `value`.
        """

        class_version = 2

        interrupt_id: str
        resume: Any
        decision: str
        reason: str | None
        actor: dict[str, Any]
        idempotency_key: str | None
        run_id: str
        # Added with hold points: the digest of the payload answered (None on older
        # events: the answer applies by position alone), and whether separation of
        # duties was in force.
        digest: str | None = None
        separation_of_duties: bool | None = None

        def fold(self, thread: WorkflowThread) -> None:
            record = thread.interrupts.pop(self.interrupt_id)
            answer = _answer(self.resume, self.digest, self.interrupt_id)
            thread.answers.setdefault(record["node"], []).append(answer)
            thread._decided(self.interrupt_id, record, self.decision, self.actor.get("id"))
            thread.run_id = self.run_id
            thread.error = None

        @staticmethod
        def upcast_v1_v2(state: dict[str, Any]) -> None:
            state["resume"] = state.pop("value")

    class InterruptApproved(Event):
        """One approval of an interrupt that needs several, by different principals (four
        eyes): the interrupt stays pending until the last one, an InterruptResumed."""

        interrupt_id: str
        resume: Any  # what the interrupt resumes with once approved
        digest: str
        reason: str | None
        actor: dict[str, Any]
        idempotency_key: str | None
        run_id: str
        approvals: int  # given so far, this one included
        needed: int
        separation_of_duties: bool

        def fold(self, thread: WorkflowThread) -> None:
            approval = {"id": self.actor.get("id"), "role": self.actor.get("role")}
            thread.interrupts[self.interrupt_id].setdefault("approved_by", []).append(approval)

    class InterruptAssigned(Event):
        """A reviewer was named for an open interrupt (`reviewer_id` None: the name taken
        off). The queue shows it; it does not keep another reviewer from deciding."""

        interrupt_id: str
        reviewer_id: str | None
        actor: dict[str, Any]

        def fold(self, thread: WorkflowThread) -> None:
            thread.interrupts[self.interrupt_id]["assigned_to"] = self.reviewer_id

    class StateEdited(Event):
        """A human changed the state (update_state), as if `as_node` wrote it."""

        values: dict[str, Any]
        as_node: str | None
        next: list[str] | None
        actor: dict[str, Any]
        reason: str | None
        # An edit as_node decides the flow: decision "edit", and whether separation of
        # duties was in force (None on plain edits and older events).
        decision: str | None = None
        separation_of_duties: bool | None = None

        def fold(self, thread: WorkflowThread) -> None:
            who = str(self.actor.get("id"))
            thread.shapers.setdefault(who, f"edited the state of thread {thread.thread_id!r}")
            fold_update(thread.values, self.values, thread.channels)
            if self.next is not None:
                thread.next = list(self.next)
                thread.done = {}
            thread.step += 1
            thread._mark_checkpoint(self, "update")

    class ThreadCompleted(Event):
        """The run reached END."""

        step: int

        def fold(self, thread: WorkflowThread) -> None:
            thread.run_id = None
            thread.decided = {}

    class ThreadFailed(Event):
        """The run stopped on an error that belongs to no one node."""

        step: int
        error_type: str
        message: str

        def fold(self, thread: WorkflowThread) -> None:
            thread.error = {"node": None, "type": self.error_type, "message": self.message}

    class ThreadCancelled(Event):
        """A human stopped the thread (the Article 14(4)(e) stop button)."""

        step: int
        actor: dict[str, Any]
        reason: str | None

        def fold(self, thread: WorkflowThread) -> None:
            thread.cancelled = {"actor": self.actor, "reason": self.reason}
            thread.interrupts = {}
            thread.decided = {}
            thread.run_id = None

    def _decided(self, interrupt_id: str, record: dict[str, Any], decision: str, by: Any) -> None:
        """An interrupt was answered: it governs the state until its run ends."""
        self.decided[interrupt_id] = {
            "node": record["node"],
            "required_role": record.get("required_role"),
            "decision": decision,
            "by": by,
        }

    @staticmethod
    def upcast_v1_v2(state: dict[str, Any]) -> None:
        """A snapshot of version 1: bare answers (they apply by position alone), no
        shapers or running decisions recorded."""
        state["answers"] = {
            node: [_answer(value, None, None) for value in values]
            for node, values in state.get("answers", {}).items()
        }
        state.setdefault("shapers", {})
        state.setdefault("decided", {})

    # -- the fold's one piece of logic ---------------------------------

    def _close_step(self, event: WorkflowThread.Event) -> None:
        routes: list[str] = []
        for node in sorted(self.done):
            record = self.done[node]
            fold_update(self.values, record["update"], self.channels)
            routes.extend(record["routes"])
            for target, sources in self.waiting_edges.items():
                if node in sources:
                    arrived = self.barriers.setdefault(target, [])
                    if node not in arrived:
                        arrived.append(node)
        for target, arrived in list(self.barriers.items()):
            if set(arrived) >= set(self.waiting_edges[target]):
                routes.append(target)
                del self.barriers[target]
        self.next = list(dict.fromkeys(routes))
        self.done = {}
        self.answers = {}
        self.error = None
        self.step += 1
        self._mark_checkpoint(event, "loop")


# Recorded from `domain.thread` before the domain had subpackages; the topics stay.
keep_topics(WorkflowThread, "domain.thread")
