"""What may happen to a thread: the aggregate's commands, each refusing what may not.

Every command checks the thread's state (`ThreadState`), then records events through
`WorkflowThread` (domain/record/thread.py), which supplies the event classes, the
clock and the hash-chained recording declared at the top of `ThreadCommands`. The
commands live apart from the events to keep each module small; the events stay nested
in the aggregate, whose recorded topics pin them there.
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, ClassVar, Self

from domain.assistants.assistant import ASSISTANT_KEYS
from domain.errors import (
    InvalidUpdateError,
    OtherEngineError,
    ReasonRequiredError,
    RunNotInProgressError,
    ThreadBusyError,
    ThreadCancelledError,
    ThreadInterruptedError,
    UnknownInterruptError,
)
from domain.oversight.hold_points import question_digest, record_digest
from domain.record.fork_state import carried_state, langgraph_carried_state
from domain.record.hashing import to_json
from domain.record.langgraph_record import LANGGRAPH
from domain.record.supersteps import START
from domain.record.thread_state import CANCELLED, IDLE, INTERRUPTED, ThreadState

if TYPE_CHECKING:
    from domain.privacy.protector import Protector

_UNSET = object()  # a metadata key the thread does not have


# Escalations of one question by a rule without a terminal step: after the last, it stays
# open for its role with no deadline (an escalation never repeats without end).
MAX_ESCALATIONS = 3


def _due(moment: datetime, seconds: float) -> str:
    return (moment + timedelta(seconds=seconds)).isoformat()


class ThreadCommands(ThreadState):
    """The commands of `WorkflowThread`, which supplies what they record with."""

    # -- supplied by WorkflowThread --------------------------------------

    ThreadStarted: ClassVar[type[Any]]
    ThreadForked: ClassVar[type[Any]]
    InputReceived: ClassVar[type[Any]]
    NodeCompleted: ClassVar[type[Any]]
    NodeFailed: ClassVar[type[Any]]
    InterruptRaised: ClassVar[type[Any]]
    InterruptExpired: ClassVar[type[Any]]
    InterruptResumed: ClassVar[type[Any]]
    InterruptApproved: ClassVar[type[Any]]
    InterruptAssigned: ClassVar[type[Any]]
    StateEdited: ClassVar[type[Any]]
    RunReclaimed: ClassVar[type[Any]]
    RunCancelled: ClassVar[type[Any]]
    MetadataUpdated: ClassVar[type[Any]]
    ThreadCompleted: ClassVar[type[Any]]
    ThreadFailed: ClassVar[type[Any]]
    ThreadCancelled: ClassVar[type[Any]]

    @staticmethod
    def _now() -> datetime:
        """The clock events are stamped by."""
        raise NotImplementedError

    @classmethod
    def _open(
        cls, event_class: type[Any], fields: dict[str, Any], protector: Protector | None = None
    ) -> Self:
        """A new thread, its first event `event_class` with `fields` (a new chain)."""
        raise NotImplementedError

    def _record(
        self, event_class: type[Any], timestamp: datetime | None = None, **fields: Any
    ) -> None:
        """Append one event, chained to the head."""
        raise NotImplementedError

    # -- a thread begins -------------------------------------------------

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
        protector: Protector | None = None,
    ) -> Self:
        """A new thread; `protector`: its graph's, if it declares personal data."""
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
        return cls._open(cls.ThreadStarted, fields, protector)

    def fork(self, new_thread_id: str, actor: dict[str, Any], run_id: str | None = None) -> Self:
        """A new thread that starts from this one as it stands, at its checkpoint.

        Pending interrupts are not carried over: the interrupted node runs
        again in the fork and asks anew (or `domain.history.forks` raises them again on
        the fork). Answers already given to a node that has not run again are
        carried over, so that its `interrupt()` calls still match by order. A real
        LangGraph graph's thread carries its latest checkpoints instead, taken at rest
        (`domain.history.forks.branch`).
        """
        assert self.checkpoint is not None, "a thread forks from a checkpoint"
        langgraph = self.engine == LANGGRAPH
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
            "state": langgraph_carried_state(self) if langgraph else carried_state(self),
            "run_id": run_id,
            **({"engine": LANGGRAPH} if langgraph else {}),
        }
        protector: Protector | None = self.__dict__.get("_protector")
        return type(self)._open(self.ThreadForked, fields, protector)

    # -- what happens to a thread, each refusing what may not happen -----

    def check_engine(self, engine: str) -> None:
        """OtherEngineError unless `engine` recorded this thread: a thread goes on only
        on the engine whose events it holds (a graph id served by the other engine after
        a redeployment, say, must not answer its questions and then fail to resume)."""
        if self.engine != engine:
            raise OtherEngineError(self.thread_id, self.engine)

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

    def take_over(
        self,
        run_id: str,
        runner: str,
        previous_runner: str,
        lease_expired_at: str,
        attempt: int,
    ) -> list[str]:
        """A runner takes over `run_id`, whose runner's lease expired, before its
        unfinished nodes run again; the nodes. Refused, recording nothing, unless the
        run is the thread's and has nodes left to run (RunNotInProgressError)."""
        nodes = self.runnable()
        if self.run_id != run_id or not nodes or self.status == CANCELLED:
            raise RunNotInProgressError(self.thread_id, run_id, self.run_id)
        self._record(
            self.RunReclaimed,
            run_id=run_id,
            runner=runner,
            previous_runner=previous_runner,
            lease_expired_at=lease_expired_at,
            reason="the previous runner's lease expired",
            attempt=attempt,
            nodes=nodes,
            task_ids=[self.task_id(node) for node in nodes],
        )
        return nodes

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
        """A human stopped the thread for good, saying why (the Art. 14(4)(e) stop: a
        reason is required, ReasonRequiredError without one); ThreadCancelledError if it
        already was."""
        if self.status == CANCELLED:
            raise ThreadCancelledError(self.thread_id)
        if reason is None or not reason.strip():
            msg = f"Stopping thread {self.thread_id!r} needs a reason: say why it is stopped"
            raise ReasonRequiredError(msg)
        self._record(self.ThreadCancelled, step=self.step, actor=actor, reason=reason)

    def update_metadata(self, metadata: dict[str, Any], actor: dict[str, Any]) -> None:
        """Merge `metadata` (JSON) into the thread's metadata (MetadataUpdated); nothing is
        recorded when it changes nothing. `graph_id` and `assistant_id` are the graph's:
        InvalidUpdateError."""
        reserved = sorted({"graph_id", *ASSISTANT_KEYS} & set(metadata))
        if reserved:
            msg = f"metadata.{reserved[0]} is the thread's graph's and cannot be set"
            raise InvalidUpdateError(msg)
        changed = to_json(
            {k: v for k, v in metadata.items() if self.metadata.get(k, _UNSET) != v},
            "The metadata",
        )
        if changed:
            self._record(self.MetadataUpdated, actor=actor, metadata=changed)

    def use_assistant(self, run_metadata: dict[str, Any], actor: dict[str, Any]) -> None:
        """A run by an assistant with recorded configuration names the assistant and its
        version in its metadata (ASSISTANT_KEYS): recorded on the thread (MetadataUpdated,
        with the run's input or answer) when they differ from the thread's. A run by a
        served graph's own assistant names none, and clears a recorded one's."""
        wanted = {key: run_metadata.get(key) for key in ASSISTANT_KEYS}
        if any(self.metadata.get(key) != value for key, value in wanted.items()):
            self._record(self.MetadataUpdated, actor=actor, metadata=wanted)

    def record_run_cancelled(self, run_id: str, actor: dict[str, Any], reason: str | None) -> None:
        """A run stopped at a step's end on `actor`'s request (RunCancelled), recorded by
        its runner; ThreadCancelledError if the thread was stopped for good meanwhile."""
        if self.status == CANCELLED:
            raise ThreadCancelledError(self.thread_id)
        self._record(self.RunCancelled, step=self.step, run_id=run_id, actor=actor, reason=reason)

    # -- interrupts ------------------------------------------------------

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
        raised_at = self._now()  # due by is counted from the event's own time
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
            title=policy.get("title"),
            bulk=bool(policy.get("bulk")),
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
        policy_version: int | None = None,
    ) -> None:
        """Record an answer to a pending interrupt, bound to the question it answers (the
        payload's digest) and naming the version of the oversight policy it was made
        under. An approval short of the approvals the interrupt needs is an
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
            "policy_version": policy_version,
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
        new_due_by = None  # decided, or escalated for the last time: no deadline after
        if rule["action"] == "escalate" and (
            "then" in rule or record.get("escalations", 0) + 1 < MAX_ESCALATIONS
        ):
            new_due_by = _due(now, rule["seconds"])
        self._record(
            self.InterruptExpired,
            interrupt_id=interrupt_id,
            due_by=due_by,
            rule=rule,
            new_due_by=new_due_by,
        )
        return True
