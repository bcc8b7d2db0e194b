"""The thread aggregate: one workflow thread, folded from its events.

A thread moves in supersteps. `next` lists the nodes of the open superstep;
each node that finishes records NodeCompleted with its update and its routes.
When every node of the step has finished, the step closes: the updates are
folded into `values` with the recorded reducers (in node-name order, as
LangGraph applies them), the routes and the join barriers give the next
step's nodes, and the closing event is a checkpoint. Reading a thread never
runs user code: everything the fold needs is in the events.

This module holds the aggregate itself: its events (nested, their recorded topics
pinned at the end) and how one is recorded, chained and stamped. What it inherits
is in its siblings: the state and its reading (thread_state.py), the commands
(thread_commands.py), the step's fold (supersteps.py) and a fork's carried state
(fork_state.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import MISSING, fields
from datetime import UTC, datetime
from functools import cache
from typing import Any, ClassVar, Self

from eventsourcing.domain import Aggregate

from domain.oversight.hold_points import question_digest, record_digest
from domain.privacy.protector import PROTECTED, Protector
from domain.record import langgraph_folds
from domain.record.fork_state import restore_carried_state
from domain.record.hashing import GENESIS_HASH, event_hash
from domain.record.langgraph_commands import LangGraphCommands
from domain.record.langgraph_record import LANGGRAPH, NATIVE
from domain.record.supersteps import START, fold_update
from domain.record.thread_commands import ThreadCommands
from domain.record.thread_state import answer_record
from domain.record.thread_uuids import thread_uuid
from domain.record.topics import keep_topics


@cache
def _defaults(event_class: type) -> dict[str, Any]:
    """The fields an event class gives a default: recorded (and hashed) when not passed."""
    return {f.name: f.default for f in fields(event_class) if f.default is not MISSING}


class WorkflowThread(ThreadCommands, LangGraphCommands, Aggregate):
    """One thread of one graph, as its events tell it.

    Its state, what it answers and the versions of its snapshots are `ThreadState`'s
    (domain/record/thread_state.py); its commands are `ThreadCommands`'
    (domain/record/thread_commands.py), and for a real LangGraph graph's thread
    (`engine` "langgraph", recorded by HoldpointSaver) `LangGraphCommands`'
    (domain/record/langgraph_commands.py).
    """

    class Event(Aggregate.Event):
        # Every field but the timestamp is plain JSON (`_record` takes only such fields,
        # as `to_json` makes them), so the store may encode it faster than the library
        # does (persistence/event_mapper.py): it says nothing else about the event.
        plain_json: ClassVar[bool] = True

        prev_hash: str
        event_hash: str

        def apply(self, aggregate: Any) -> None:
            if aggregate.engine == LANGGRAPH:
                self.fold_langgraph(aggregate)
            else:
                self.fold(aggregate)
            aggregate.head_hash = self.event_hash

        def fold(self, thread: WorkflowThread) -> None:
            raise NotImplementedError

        def fold_langgraph(self, thread: WorkflowThread) -> None:
            """How the event folds into a real LangGraph graph's thread: as into a native
            one, unless the class says otherwise (domain/record/langgraph_folds.py)."""
            self.fold(thread)

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
        engine: str = NATIVE  # "langgraph": a real LangGraph graph's, by HoldpointSaver

        def fold(self, thread: WorkflowThread) -> None:
            """`__init__` has already set the thread up from these fields."""

        fold_langgraph = fold

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
        engine: str = NATIVE

        def fold(self, thread: WorkflowThread) -> None:
            thread.run_id = self.run_id
            restore_carried_state(thread, self.state, self.thread_id, self.source_thread_id)
            thread.forked_from = self.origin()
            thread._mark_checkpoint(self, "fork")

        def fold_langgraph(self, thread: WorkflowThread) -> None:
            thread.run_id = self.run_id
            langgraph_folds.fold_copied(thread, self)
            thread.forked_from = self.origin()

        def origin(self) -> dict[str, Any]:
            return {
                "thread_id": self.source_thread_id,
                "version": self.source_version,
                "hash": self.source_hash,
            }

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
        engine: str = NATIVE,
        **_: Any,
    ) -> None:
        self.engine = engine
        self.heads = {}
        self.early = {}
        self.thread_id = thread_id
        self.graph_id = graph_id
        self.graph_digest = graph_digest
        self.channels = channels
        self.waiting_edges = waiting_edges
        self.metadata = metadata
        self.started_by = actor
        self.values = dict(initial or {})
        self.step = -2
        self.next = []
        self.done = {}
        self.interrupts = {}
        self.answers = {}
        self.shapers = {}
        self.decided = {}
        self.barriers = {}
        self.error = None
        self.cancelled = None
        self.checkpoint = None
        self.parent_checkpoint = None
        self.run_id = None
        self.forked_from = None
        self.head_hash = event_hash

    # -- recording -----------------------------------------------------

    @staticmethod
    def _now() -> datetime:
        """The clock every event is stamped by (a test may replace this module's datetime)."""
        return datetime.now(UTC)

    @classmethod
    def _open(
        cls,
        event_class: type[Aggregate.Created],
        fields: dict[str, Any],
        protector: Protector | None = None,
    ) -> Self:
        """A new thread whose first event, `event_class` with `fields`, heads a new chain.
        `protector`: the graph's, if it declares personal data (see `_record`)."""
        timestamp = cls._now()
        thread_id = fields["thread_id"]
        fields = {**_defaults(event_class), **fields}
        name = event_class.__name__
        recorded = protector.protect(name, fields, {}, {}) if protector else None
        digest = event_hash(
            name, thread_id, 1, timestamp, GENESIS_HASH, recorded or fields, recording=True
        )
        thread = cls._create(
            event_class,
            id=thread_uuid(thread_id),
            timestamp=timestamp,
            prev_hash=GENESIS_HASH,
            event_hash=digest,
            **fields,
        )
        if protector is not None:
            thread.protect_with(protector)
            if recorded is not None:
                object.__setattr__(thread._pending_events[-1], PROTECTED, recorded)
        return thread

    def protect_with(self, protector: Protector | None) -> None:
        """Record this thread's personal values sealed by `protector` (domain/privacy)."""
        self._protector = protector

    @property
    def protected(self) -> bool:
        """Whether this thread records personal values sealed (and so takes no snapshot)."""
        return self.__dict__.get("_protector") is not None

    def _record(
        self, event_class: type[Event], timestamp: datetime | None = None, **fields: Any
    ) -> None:
        """Append one event, chained to the head, recorded at `timestamp` (default: now).
        Fields must be plain JSON; those not given take their class's defaults, which are
        recorded, and so hashed, with the rest."""
        timestamp = timestamp or self._now()
        version = self.version + 1
        defaults = _defaults(event_class)
        if defaults and not defaults.keys() <= fields.keys():
            fields = {**defaults, **fields}
        protector: Protector | None = self.__dict__.get("_protector")
        recorded = None
        if protector is not None:  # the hash covers the fields as recorded: sealed
            recorded = protector.protect(event_class.__name__, fields, self.metadata, self.values)
        digest = event_hash(
            event_class.__name__,
            self.thread_id,
            version,
            timestamp,
            self.head_hash,
            recorded or fields,
            recording=True,
        )
        # What the library's trigger_event does, without its checks of an event made
        # elsewhere (its id and version are this thread's next, by construction here).
        # The library makes each event class a dataclass at run time, unseen by mypy.
        make: Callable[..., WorkflowThread.Event] = event_class
        event = make(
            originator_id=self.id,
            originator_version=version,
            timestamp=timestamp,
            prev_hash=self.head_hash,
            event_hash=digest,
            **fields,
        )
        event.apply(self)
        self.version, self.modified_on = version, timestamp
        if recorded is not None:
            object.__setattr__(event, PROTECTED, recorded)
        self._pending_events.append(event)

    def makes_checkpoint(self, event: WorkflowThread.Event) -> bool:
        """Whether applying `event` next would make a checkpoint."""
        if self.engine == LANGGRAPH:
            return isinstance(event, WorkflowThread.CheckpointSaved) and event.namespace == ""
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

        def fold_langgraph(self, thread: WorkflowThread) -> None:
            langgraph_folds.fold_input(thread, self)

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
        # A real LangGraph graph's task: {"namespace", "checkpoint_id", "path"}, and its
        # "writes" ([[channel, value], ...]) when `update` cannot hold them (a channel
        # written twice), and "refused" (why) when it ran on an answer or in a run that
        # was refused: its writes are then not kept on the checkpoint. None for the
        # native engine's nodes.
        task: dict[str, Any] | None = None

        def fold(self, thread: WorkflowThread) -> None:
            thread.done[self.node] = {"update": self.update, "routes": self.routes}
            thread.answers.pop(self.node, None)
            if self.applied and not thread.interrupts:  # the decisions took effect: who
                thread.shapers = {}  # shapes the next question is counted anew
            if all(node in thread.done for node in thread.next):
                thread._close_step(self)

        def fold_langgraph(self, thread: WorkflowThread) -> None:
            langgraph_folds.fold_node_completed(thread, self)

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
        # A real LangGraph graph's task that raised it: {"namespace", "task_id",
        # "checkpoint_id"} (and its "response_schema", if any). None: the native engine's.
        task: dict[str, Any] | None = None
        # The inbox's title template and whether it may decide it in bulk (`interrupt()`).
        title: str | None = None
        bulk: bool = False

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
                **({"title": self.title} if self.title is not None else {}),
                **({"bulk": True} if self.bulk else {}),
            }

        def fold_langgraph(self, thread: WorkflowThread) -> None:
            langgraph_folds.fold_interrupt_raised(thread, self)

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
                record["escalations"] = record.get("escalations", 0) + 1
                if "then" in self.rule:  # the chain's next step, with the same deadline
                    record["on_expiry"] = {**self.rule["then"], "seconds": self.rule["seconds"]}
                return
            record = thread.interrupts.pop(self.interrupt_id)
            answer = answer_record(self.rule["resume"], record_digest(record), self.interrupt_id)
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
        # Added with the policy on record: the version of the oversight policy the answer
        # was made under (domain/oversight/policy_records.py); None on older events and
        # where none was recorded (a Python caller's graph).
        policy_version: int | None = None

        def fold(self, thread: WorkflowThread) -> None:
            record = thread.interrupts.pop(self.interrupt_id)
            answer = answer_record(self.resume, self.digest, self.interrupt_id)
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
        policy_version: int | None = None  # as on InterruptResumed

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

        def fold_langgraph(self, thread: WorkflowThread) -> None:
            langgraph_folds.fold_state_edited(thread, self)

    class RunReclaimed(Event):
        """A runner took a run over from one whose lease expired (it died, or stalled),
        before running the run's unfinished nodes again: at-least-once, on record."""

        run_id: str
        runner: str
        previous_runner: str
        lease_expired_at: str
        reason: str
        attempt: int
        nodes: list[str]  # the nodes that run again, each with its stable task id
        task_ids: list[str]

        def fold(self, thread: WorkflowThread) -> None:
            thread.run_id = self.run_id

    class MetadataUpdated(Event):
        """Someone set keys of the thread's metadata (LangGraph's `threads.update`): the
        keys and their new values, merged into the metadata."""

        actor: dict[str, Any]
        metadata: dict[str, Any]

        def fold(self, thread: WorkflowThread) -> None:
            thread.metadata = {**thread.metadata, **self.metadata}

        def fold_langgraph(self, thread: WorkflowThread) -> None:
            self.fold(thread)

    class RunCancelled(Event):
        """A run was stopped at a step's end, on a request by `actor` (LangGraph's
        `runs.cancel`): its runner recorded it and ran nothing more. The nodes it had
        yet to run stay pending: a later run continues from here."""

        step: int
        run_id: str
        actor: dict[str, Any]
        reason: str | None

        def fold(self, thread: WorkflowThread) -> None:
            thread.run_id = None
            thread.halted_at = self.originator_version

        def fold_langgraph(self, thread: WorkflowThread) -> None:
            self.fold(thread)

    class InterruptSuperseded(Event):
        """A pending interrupt was left behind unanswered: the thread moved on without it
        (a real LangGraph graph's new input, edit, fork or goto)."""

        interrupt_id: str
        reason: str
        actor: dict[str, Any]

        def fold(self, thread: WorkflowThread) -> None:
            langgraph_folds.fold_superseded(thread, self)

    class CheckpointSaved(Event):
        """A real LangGraph graph saved a checkpoint (HoldpointSaver): what changed since
        `base`, the namespace's checkpoint before it (None: every value, from nothing).
        `changed` holds the channels set, `grown` the lists that only grew (the items
        added), `emptied` the channels given a new version and no value; `versions` and
        `seen` are {"set": ..., "del": [...]} against the base's; `next` the nodes it has
        yet to run."""

        namespace: str
        checkpoint_id: str
        parent_id: str | None
        base: str | None
        source: str
        step: int
        ts: str
        changed: dict[str, Any]
        grown: dict[str, list[Any]]
        emptied: list[str]
        versions: dict[str, Any]
        seen: dict[str, Any]
        metadata: dict[str, Any]
        form: dict[str, Any]
        next: list[str]

        def fold(self, thread: WorkflowThread) -> None:
            langgraph_folds.fold_checkpoint(thread, self)

    class WritesSaved(Event):
        """A real LangGraph graph saved writes that are no node's completion
        (HoldpointSaver): a Command's resume, update or goto, a task's interrupt or
        error, update_state's writes. [[channel, value], ...] in their order."""

        namespace: str
        checkpoint_id: str
        task_id: str
        task_path: str
        writes: list[list[Any]]

        def fold(self, thread: WorkflowThread) -> None:
            langgraph_folds.fold_writes(thread, self)

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

    # Events another writer may record while a run steps that leave the run's step as it
    # ran: the thread's metadata, a question still open (its reviewer named, its deadline
    # passed), and its cancellation (the stop button: the step that was running when it
    # came is on record after it, and nothing runs after). The step is recorded after them
    # (`Workflows.past_asides`); every other write to a thread a run holds waits for it.
    ASIDES = (InterruptAssigned, InterruptExpired, MetadataUpdated, ThreadCancelled)


# Recorded from `domain.thread` before the domain had subpackages; the topics stay.
keep_topics(WorkflowThread, "domain.thread")
