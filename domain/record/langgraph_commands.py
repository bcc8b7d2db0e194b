"""What a real LangGraph graph does to its thread, recorded as the catalogue's events.

`HoldpointSaver` calls these commands with LangGraph's checkpoints and writes in their
JSON form (domain/record/langgraph_record.py). Each records, in one commit:

- a checkpoint (`put`): `CheckpointSaved` with only what changed since its parent,
  preceded by `InputReceived` (a run's input), or by `StateEdited` and the edit's own
  writes (`update_state`), and by `InterruptSuperseded` for each interrupt it leaves
  behind unanswered; followed by `ThreadCompleted` when the root has nothing left to run;
- a task's writes (`put_writes`): `NodeCompleted` with the writes as its update; or, for
  writes that are no node's completion, `WritesSaved` with them, beside what they mean:
  `InterruptRaised` for each new interrupt, `NodeFailed` for an error, `InterruptResumed`
  for each interrupt a `Command(resume=...)` answers (checked first: a resume of nothing
  pending, of an interrupt that is not pending, or one value for several, is refused and
  nothing is recorded), `StateEdited` for a Command's update or goto.

Writes LangGraph saves again (a retried task) are recorded once.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import replace
from datetime import datetime
from typing import Any, ClassVar, Self

from domain.errors import (
    AmbiguousResumeError,
    ApprovalsOutstandingError,
    HoldpointError,
    InvalidUpdateError,
    NotInterruptedError,
    QuestionAskedAgainError,
    StaleCheckpointError,
    ThreadCancelledError,
    UnknownInterruptError,
)
from domain.oversight import hold_points
from domain.oversight.hold_points import Oversight, question_digest
from domain.record.langgraph_folds import early_key, head_values, kept_writes, resolved_values
from domain.record.langgraph_record import (
    ERROR,
    INTERRUPT,
    LANGGRAPH,
    NULL_TASK_ID,
    PULL,
    PUSH,
    RESUME,
    SCHEDULED,
    START,
    TAG,
    TASKS,
    UPDATE_TASK,
    Caller,
    SavedCheckpoint,
    SavedWrites,
    delta,
    interrupts_in,
    is_state_channel,
    next_nodes,
    node_of,
    routes_of,
    write_index,
)
from domain.record.resume_maps import resume_map
from domain.record.thread_state import CANCELLED

SPECIAL = frozenset({ERROR, INTERRUPT, SCHEDULED})  # a task's writes that are no completion
ANSWERING = frozenset({INTERRUPT, RESUME})  # a task's writes while it waits for answers


class LangGraphCommands:
    """The commands of a thread recorded by HoldpointSaver; `WorkflowThread` supplies the
    events and their recording, as it does for `ThreadCommands`."""

    ThreadStarted: ClassVar[type[Any]]
    InputReceived: ClassVar[type[Any]]
    NodeCompleted: ClassVar[type[Any]]
    NodeFailed: ClassVar[type[Any]]
    InterruptRaised: ClassVar[type[Any]]
    InterruptSuperseded: ClassVar[type[Any]]
    StateEdited: ClassVar[type[Any]]
    CheckpointSaved: ClassVar[type[Any]]
    WritesSaved: ClassVar[type[Any]]
    ThreadCompleted: ClassVar[type[Any]]

    thread_id: str
    heads: dict[str, dict[str, Any]]
    interrupts: dict[str, dict[str, Any]]
    answers: dict[str, list[dict[str, Any]]]
    values: dict[str, Any]
    started_by: dict[str, Any]
    early: dict[str, list[list[Any]]]
    step: int

    @staticmethod
    def _now() -> datetime:
        raise NotImplementedError

    @classmethod
    def _open(cls, event_class: type[Any], fields: dict[str, Any]) -> Self:
        raise NotImplementedError

    def _record(
        self, event_class: type[Any], timestamp: datetime | None = None, **fields: Any
    ) -> None:
        raise NotImplementedError

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
        raise NotImplementedError

    @property
    def status(self) -> str:
        raise NotImplementedError

    # -- a thread begins -------------------------------------------------

    @classmethod
    def begin(
        cls,
        *,
        thread_id: str,
        graph_id: str,
        graph_digest: str,
        channels: dict[str, str | None],
        metadata: dict[str, Any],
        actor: dict[str, Any],
    ) -> Self:
        """A thread of a real LangGraph graph, before its first checkpoint."""
        fields = {
            "thread_id": thread_id,
            "graph_id": graph_id,
            "graph_digest": graph_digest,
            "channels": channels,
            "initial": {},
            "waiting_edges": {},
            "metadata": metadata,
            "actor": actor,
            "engine": LANGGRAPH,
        }
        return cls._open(cls.ThreadStarted, fields)

    # -- put -------------------------------------------------------------

    def follows_head(self, namespace: str, parent_id: str | None) -> bool:
        """Whether a checkpoint with this parent follows the namespace's latest one, so
        that it may be recorded as what changed since (else every value is recorded)."""
        head = self.heads.get(namespace)
        return head is not None and parent_id == head["id"]

    def awaits_writes(
        self, namespace: str, parent_id: str | None, step: int, seen: dict[str, Any]
    ) -> bool:
        """Whether a step's checkpoint, with these versions seen, waits for the writes of a
        task that ran on its parent, the namespace's latest checkpoint, one step before.
        The tasks that ran: a node's whose seen versions changed, and one for each `Send`
        the parent holds. Every task LangGraph runs to its end saves writes other than an
        interrupt or a resume (`NO_WRITES` when it has none); a run that saves only at its
        exit (`durability="exit"`) saves no writes."""
        head = self.heads.get(namespace)
        if head is None or parent_id != head["id"] or step != head["step"] + 1:
            return False
        before = head["seen"]
        ran = [
            node
            for node, versions in seen.items()
            if node != INTERRUPT and versions and versions != before.get(node)
        ]
        sends = len(head["values"].get(TASKS) or ())
        if not ran and not sends:
            return False
        ended = {path for _, channel, _, path, _ in head["writes"] if channel not in ANSWERING}
        if any(f"{PULL}, {node}" not in ended for node in ran):
            return True
        parts = (path.split(", ") for path in ended if path.startswith(PUSH))
        return len({p[1] for p in parts if len(p) > 1 and p[1].isdigit()}) < sends

    def awaits_command(self, namespace: str) -> bool:
        """Whether a namespace's first checkpoint, the input of a run that a Command began,
        waits for the Command's writes: LangGraph saves them first, on the empty checkpoint
        it begins from and never saves (so they are kept aside, `kept_writes`)."""
        if namespace in self.heads:
            return False
        prefix = early_key(namespace, "")
        return not any(
            write[0] == NULL_TASK_ID
            for key, writes in self.early.items()
            if key.startswith(prefix)
            for write in writes
        )

    def save_checkpoint(
        self,
        saved: SavedCheckpoint,
        caller: Caller,
        policy: Oversight,
        edit_writes: list[SavedWrites] | None = None,
    ) -> None:
        """Record a checkpoint LangGraph saved (see the module's docstring). `edit_writes`:
        update_state's writes, saved on the parent just before its checkpoint. An edit
        (`update_state`) is held to the hold points' rules for `caller`, as a native
        graph's is, and so is a run that saves no writes (`answers_unsaved`) and began
        with no new input (`hold_points.check_unsaved_run`): each raises its refusal,
        recording nothing."""
        namespace = saved.namespace
        if saved.source == "update":
            as_node = None if caller.as_node is None else str(caller.as_node)
            hold_points.check_edit(self, caller.actor, policy, as_node, caller.reason)  # type: ignore[arg-type]
        follows = self.follows_head(namespace, saved.parent_id)
        if saved.grown and not follows:
            raise StaleCheckpointError(self.thread_id, namespace, saved.checkpoint_id)
        head = self.heads.get(namespace) if follows else None
        base_versions = head["versions"] if head else {}
        values = resolved_values(
            head_values(self, namespace) if head else {},
            base_versions,
            saved.versions,
            saved.values,
            saved.grown,
        )
        next_up = next_nodes(saved.versions, saved.seen, values)
        if self.status == CANCELLED and (saved.source != "loop" or next_up):
            # the stop button: nothing runs on from here (a step that was running when
            # it came has its node's writes on record; its checkpoint, the run's end)
            raise ThreadCancelledError(self.thread_id)
        left = self._left_behind(namespace, saved)
        # the run's input, consumed since (on a namespace's first checkpoint, only if it
        # was the first write: a Command LangGraph begins a thread with writes before it)
        began_with_input = START in saved.emptied and (
            namespace in self.heads or _input_written_first(saved.seen)
        )
        if saved.answers_unsaved and saved.source == "loop" and not began_with_input:
            ends = namespace == "" and not next_up  # and leaves every question unanswered
            passed = list(self.interrupts) if ends else left
            hold_points.check_unsaved_run(self, caller.actor, passed)  # type: ignore[arg-type]
        self._supersede(left, saved, caller)
        if saved.source == "input":
            self._record(
                self.InputReceived,
                run_id=caller.run_id,
                input=saved.values.get(START),
                actor=caller.actor,
            )
        elif saved.source == "update":
            for writes in edit_writes or ():
                self._record_writes(writes)
            self._record(
                self.StateEdited,
                values=_edit_values(edit_writes, saved),
                as_node=caller.as_node,
                next=None,
                actor=caller.actor,
                reason=caller.reason,
                decision=None,
            )
        self._record(
            self.CheckpointSaved,
            namespace=namespace,
            checkpoint_id=saved.checkpoint_id,
            parent_id=saved.parent_id,
            base=head["id"] if head else None,
            source=saved.source,
            step=saved.step,
            ts=saved.ts,
            changed=saved.values,
            grown=saved.grown,
            emptied=saved.emptied,
            versions=delta(base_versions, saved.versions),
            seen=delta(head["seen"] if head else {}, saved.seen),
            metadata=saved.metadata,
            form=saved.form,
            next=next_up,
        )
        if namespace == "" and saved.source == "loop" and not next_up and self.status != CANCELLED:
            self._unanswered(caller)
            self._record(self.ThreadCompleted, step=saved.step)

    def _left_behind(self, namespace: str, saved: SavedCheckpoint) -> list[str]:
        """The interrupts a new checkpoint leaves behind unanswered: those pending in its
        namespace on another checkpoint than its parent (the thread moved on from
        elsewhere: a fork, time travel, a step past them), or on its parent when it is new
        input or a fork. One pending on the parent stays pending across a step of the
        parent's (its answer may still be on its way: LangGraph saves writes and
        checkpoints in no fixed order) and across an edit (the interrupted node will ask
        again from the edited state)."""
        left = []
        for interrupt_id, record in self.interrupts.items():
            places = [where[1] for where in record.get("where", ()) if where[0] == namespace]
            if not places or any(place >= saved.checkpoint_id for place in places):
                continue  # raised on this checkpoint or a later one, saved before it
            stays = (
                saved.parent_id in places
                and saved.source in ("loop", "update")
                and not saved.answers_unsaved
            )
            if not stays:
                left.append(interrupt_id)
        return left

    def _supersede(self, left: list[str], saved: SavedCheckpoint, caller: Caller) -> None:
        """Record the interrupts `left` behind (`_left_behind`) superseded, saying why."""
        why = {
            "input": "new input started another run",
            "fork": "the thread was forked from an earlier checkpoint",
        }.get(saved.source, f"the thread moved on to checkpoint {saved.checkpoint_id}")
        if saved.answers_unsaved:
            why += ' in a run with durability="exit", which saves no answer'
        for interrupt_id in left:
            self._record(
                self.InterruptSuperseded,
                interrupt_id=interrupt_id,
                reason=f"no answer was given before {why}",
                actor=caller.actor,
            )

    def _unanswered(self, caller: Caller) -> None:
        """The run ended with questions pending that no answer on record met (a graph run
        with `durability="exit"` saves no writes, its answers among them): superseded."""
        for interrupt_id in list(self.interrupts):
            self._record(
                self.InterruptSuperseded,
                interrupt_id=interrupt_id,
                reason="the run ended with no answer to it on record",
                actor=caller.actor,
            )

    # -- put_writes --------------------------------------------------------

    def save_writes(
        self,
        saved: SavedWrites,
        caller: Caller,
        policy: Oversight,
        *,
        answered: bool = False,
        ran_on: HoldpointError | None = None,
        asked_since: Collection[str] = (),
    ) -> HoldpointError | None:
        """Record a task's writes (see the module's docstring); writes already recorded
        at their index record nothing again.

        Returns the refusal of answers a task consumed that were not given by a Command's
        own resume (a resume map is handed to the tasks, not saved apart): the task ran
        with them all the same, so its completion is recorded, without them. `answered`: a
        Command's resume that the task it answered already recorded, its writes saved
        first (LangGraph saves them in no fixed order): its writes alone are recorded.
        `ran_on`: the refusal of the run the task ran in (a Command of it was refused):
        its completion is recorded as run on that refusal, its writes not kept.
        `asked_since`: a Command's, the interrupts its own run raised, saved before it."""
        if not self._fresh(saved):
            return None
        if saved.task_id == NULL_TASK_ID:
            self._command_writes(saved, caller, policy, answered, asked_since)
        elif saved.task_path.startswith(UPDATE_TASK):
            self._record_writes(saved)
        elif SPECIAL.isdisjoint(channel for channel, _ in saved.writes):
            return self._complete_node(saved, caller, policy, ran_on)
        else:
            self._task_outcome(saved, policy)
        return None

    def _fresh(self, saved: SavedWrites) -> bool:
        """Whether any of the writes is not yet kept on its checkpoint (a special one
        replaces the one kept, so it always is)."""
        writes = kept_writes(self, saved.namespace, saved.checkpoint_id)
        if writes is None:
            return True
        kept = {(w[0], w[4]) for w in writes}
        return any(
            index < 0 or (saved.task_id, index) not in kept
            for index in (write_index(ch, i) for i, (ch, _) in enumerate(saved.writes))
        )

    def _record_writes(self, saved: SavedWrites) -> None:
        self._record(
            self.WritesSaved,
            namespace=saved.namespace,
            checkpoint_id=saved.checkpoint_id,
            task_id=saved.task_id,
            task_path=saved.task_path,
            writes=[[channel, value] for channel, value in saved.writes],
        )

    def _on_head(self, saved: SavedWrites) -> dict[str, Any] | None:
        head = self.heads.get(saved.namespace)
        return head if head is not None and head["id"] == saved.checkpoint_id else None

    def _step_and_node(self, saved: SavedWrites) -> tuple[int, str]:
        """The step a task ran in (its checkpoint's, plus one; -1 for one not among the
        namespace's recent checkpoints) and its node."""
        pushed = saved.task_path.startswith(PUSH) and self._on_head(saved) is not None
        values = head_values(self, saved.namespace) if pushed else {}  # its Send's node
        at = self._recent(saved)
        return (at[0] + 1 if at else -1), node_of(saved.task_path, values)

    def _recent(self, saved: SavedWrites) -> list[Any] | None:
        """[step, ts] of the checkpoint a task's writes are on, if it is a recent one."""
        head = self.heads.get(saved.namespace)
        return None if head is None else head["recent"].get(saved.checkpoint_id)

    def _complete_node(
        self,
        saved: SavedWrites,
        caller: Caller,
        policy: Oversight,
        ran_on: HoldpointError | None,
    ) -> HoldpointError | None:
        step, node = self._step_and_node(saved)
        # A task of a refused run answers nothing: what it consumed was refused with it.
        refused = None if ran_on is not None else self._consumed_answers(saved, caller, policy)
        why = refused or ran_on
        channels = [channel for channel, _ in saved.writes]
        as_update = len(set(channels)) == len(channels)
        applied = None
        if RESUME in channels:
            applied = [
                {"interrupt_id": a.get("interrupt_id"), "digest": a.get("digest")}
                for a in self.answers.get(node, ())
            ] or None
        self._record(
            self.NodeCompleted,
            step=step,
            node=node,
            task_id=saved.task_id,
            update=dict(saved.writes) if as_update else {},
            routes=routes_of(saved.writes),
            duration_ms=self._elapsed_ms(self._recent(saved)),
            applied=applied,
            task={
                "namespace": saved.namespace,
                "checkpoint_id": saved.checkpoint_id,
                "path": saved.task_path,
                **({} if as_update else {"writes": [list(write) for write in saved.writes]}),
                # It ran on a refused answer or Command: its writes are not kept on the
                # checkpoint, so LangGraph runs it again when the flow reaches it.
                **({} if why is None else {"refused": str(why)}),
            },
        )
        return refused

    def _elapsed_ms(self, at: list[Any] | None) -> float:
        """The time since the step's checkpoint was saved: how long the task took, at
        most (LangGraph tells a saver when a task ends, not when it began)."""
        if at is None:
            return 0.0
        try:
            began = datetime.fromisoformat(at[1])
            return round(max((self._now() - began).total_seconds(), 0.0) * 1000, 3)
        except (TypeError, ValueError):
            return 0.0

    def _task_outcome(self, saved: SavedWrites, policy: Oversight) -> None:
        """An interrupt or an error: what it means, then the writes as they were. An
        interrupt needs the graph's approvals (`policy.approvals`, its four eyes), as a
        native graph's does when its `interrupt()` names none."""
        step, node = self._step_and_node(saved)
        for channel, value in saved.writes:
            if channel == INTERRUPT and self.status != CANCELLED:  # asked once stopped: moot
                for index, interrupt in enumerate(interrupts_in(value)):
                    if interrupt["id"] in self.interrupts:
                        continue  # pending already: a subgraph's, seen by its parent
                    self._supersede_asked(saved, node, index)
                    payload = interrupt.get("value")
                    self._record(
                        self.InterruptRaised,
                        step=step,
                        node=node,
                        interrupt_id=str(interrupt["id"]),
                        index=index,
                        value=payload,
                        digest=question_digest(payload),
                        approvals=policy.approvals,
                        task={
                            "namespace": saved.namespace,
                            "task_id": saved.task_id,
                            "checkpoint_id": saved.checkpoint_id,
                            **_schema_of(interrupt),
                        },
                    )
            elif channel == ERROR:
                error_type, message = _error_of(value)
                self._record(
                    self.NodeFailed, step=step, node=node, error_type=error_type, message=message
                )
        self._record_writes(saved)

    def _supersede_asked(self, saved: SavedWrites, node: str, index: int) -> None:
        """The node asks its `index`th question again, from another checkpoint than the one
        it first asked it on (it runs again after an edit, say): the question pending from
        before is superseded. Its parallel tasks' questions, raised on the same checkpoint,
        stand."""
        for interrupt_id, record in list(self.interrupts.items()):
            raised_on = (record.get("where") or [[None, None]])[0]
            if (
                record["node"] == node
                and record["index"] == index
                and record.get("namespace") == saved.namespace
                and raised_on != [saved.namespace, saved.checkpoint_id]
            ):
                self._record(
                    self.InterruptSuperseded,
                    interrupt_id=interrupt_id,
                    reason=f"node {node!r} asked its question again",
                    actor=self.started_by,
                )

    def _command_writes(
        self,
        saved: SavedWrites,
        caller: Caller,
        policy: Oversight,
        answered: bool,
        asked_since: Collection[str],
    ) -> None:
        """A Command's writes: its resume answers the pending interrupts (checked first),
        its update and goto edit the state, as `caller`, held to the hold points standing
        when it was given (not those its own run raised since: `asked_since`)."""
        resumes = [value for channel, value in saved.writes if channel == RESUME]
        if resumes and not answered:
            if resume_map(resumes[-1]) is None and len(self.interrupts) == 1:
                self._check_not_asked_again(caller, self.interrupts)  # the one it answers
            self._answer(resumes[-1], caller, policy)
        update = {
            channel: value
            for channel, value in saved.writes
            if channel != RESUME and is_state_channel(channel)
        }
        goto = routes_of(saved.writes)
        # At a standing hold point, who may decide it; elsewhere a role that runs threads
        # (as for a native graph and over HTTP).
        for change, made in (("A Command(update=...)", update), ("A Command(goto=...)", goto)):
            if made:
                hold_points.check_may_change(self, caller.actor, policy, change, asked_since)  # type: ignore[arg-type]
        if update or goto:
            self._record(
                self.StateEdited,
                values=update,
                as_node=None,
                next=goto or None,
                actor=caller.actor,
                reason=caller.reason,
                decision=None,
            )
        self._record_writes(saved)

    def _check_not_asked_again(self, caller: Caller, interrupt_ids: Iterable[str]) -> None:
        """A resume that names no question goes, in LangGraph, to the first one its run
        asks: the one pending, while the thread stands where it was asked; after an edit
        since (`asked_before_an_edit`), the node runs again from the edited state and
        asks anew, and the answer goes there, unseen. Refused for a named actor
        (QuestionAskedAgainError), as a native graph asks anew; the owner's goes where
        LangGraph sends it."""
        if hold_points.is_owner(caller.actor):
            return
        for interrupt_id in interrupt_ids:
            if self.asked_before_an_edit(interrupt_id):
                raise QuestionAskedAgainError(interrupt_id)

    def asked_before_an_edit(self, interrupt_id: str) -> bool:
        """Whether a pending question was asked before the thread's state was edited:
        a namespace it is pending in has moved on from where it was first pending there.
        LangGraph then holds it pending no longer (its node asks anew when the thread
        goes on, under another id); Holdpoint keeps it pending, as it was shown."""
        first: dict[str, str] = {}
        for namespace, checkpoint_id in self.interrupts[interrupt_id].get("where", ()):
            first.setdefault(namespace, checkpoint_id)
        return any(
            (head := self.heads.get(namespace)) is not None and head["id"] != checkpoint_id
            for namespace, checkpoint_id in first.items()
        )

    def _consumed_answers(
        self, saved: SavedWrites, caller: Caller, policy: Oversight
    ) -> HoldpointError | None:
        """The answers a task consumed (its `__resume__` write: one per question, in
        order) to questions of its own still pending: a resume map's, which LangGraph hands
        to the tasks and saves nowhere else. Recorded as answers by `caller` if its hold
        points' rules allow; their refusal otherwise."""
        consumed = [value for channel, value in saved.writes if channel == RESUME]
        if not consumed or not isinstance(consumed[-1], list):
            return None
        mine = {record["index"]: i for i, record in self.questions_of(saved).items()}
        if not mine:
            return None
        values = consumed[-1]
        answers = {mine[i]: values[i] for i in sorted(mine) if i < len(values)}
        try:
            # (a task re-run after an edit consumes only a resume naming no question)
            self._check_not_asked_again(caller, answers)
            self._check_approvals_in(answers, saved, caller)
            self._record_answers(answers, caller, policy)
        except HoldpointError as error:
            return error
        return None

    def _check_approvals_in(
        self, answers: dict[str, Any], saved: SavedWrites, caller: Caller
    ) -> None:
        """ApprovalsOutstandingError if a task ran on the answer of a principal whose
        approval is on record while the question waits for others' (four eyes): the
        Command's resume recorded it as one approval, and LangGraph ran the node anyway."""
        actor_id = caller.actor.get("id")
        for interrupt_id in answers:
            approved_by = self.interrupts[interrupt_id].get("approved_by", ())
            if any(approval["id"] == actor_id for approval in approved_by):
                _, node = self._step_and_node(saved)
                needed = self.interrupts[interrupt_id].get("approvals", 1)
                raise ApprovalsOutstandingError(
                    interrupt_id, node, str(actor_id), len(approved_by), needed
                )

    def questions_of(self, saved: SavedWrites) -> dict[str, dict[str, Any]]:
        """The pending questions a task's answers go to: those it raised, or, when its node
        runs again from another checkpoint (after an edit, say), those the node raised in
        its namespace there. Parallel tasks of one node (a `Send` each, say), raised on
        the same checkpoint, each keep their own."""
        _, node = self._step_and_node(saved)
        here = [saved.namespace, saved.checkpoint_id]
        return {
            interrupt_id: record
            for interrupt_id, record in self.interrupts.items()
            if record.get("task_id") == saved.task_id
            or (
                record["node"] == node
                and record.get("namespace") == saved.namespace
                and (record.get("where") or [here])[0] != here
            )
        }

    def answer_resume(self, resume: Any, caller: Caller, policy: Oversight) -> None:
        """Answer the pending interrupts as `Command(resume=...)` would: a resume map names
        them, any other value answers the one pending (refused: several, or none). For the
        server, which records an answer before LangGraph runs the node."""
        self._answer(resume, caller, policy)

    def concur(self, interrupt_id: str | None, caller: Caller, policy: Oversight) -> None:
        """Record `caller`'s approval of a pending interrupt that needs more (four eyes),
        resuming nothing: LangGraph, driven from Python, runs the node on any resume, so
        the approvals before the last are given so, and the last as `Command(resume=...)`.
        `interrupt_id` may be left out when one is pending. The hold points' rules apply
        as to any answer; the last approval is refused here (InvalidUpdateError)."""
        [interrupt_id] = self._addressed(None if interrupt_id is None else {interrupt_id: None})
        record = self.interrupts[interrupt_id]
        approving = replace(caller, decision="approve")
        hold_points.check_may_decide(self, interrupt_id, approving.actor, policy)  # type: ignore[arg-type]
        given = len(record.get("approved_by", ())) + 1
        needed = record.get("approvals", 1)
        if given >= needed:
            msg = (
                f"Interrupt {interrupt_id} needs {needed} approvals and this is approval "
                f"{given}, the last: it resumes the graph, so give it as "
                "Command(resume=...); nothing was recorded"
            )
            raise InvalidUpdateError(msg)
        self._record_answers(
            {interrupt_id: hold_points.answer_value("approve", record)}, approving, policy
        )

    def _answer(self, resume: Any, caller: Caller, policy: Oversight) -> None:
        """Answer the pending interrupts a resume names (or the one pending), each checked
        by its hold point's rules before any is recorded."""
        self._record_answers(self._addressed(resume_map(resume), resume), caller, policy)

    def _addressed(self, named: dict[str, Any] | None, value: Any = None) -> dict[str, Any]:
        """What an answer goes to: the interrupts `named` (each must be pending), else the
        one pending, with `value`. Refused for a cancelled thread, and when nothing is
        pending or several are and none is named."""
        if self.status == CANCELLED:
            raise ThreadCancelledError(self.thread_id)
        pending = list(self.interrupts)
        if named is not None:
            unknown = [key for key in named if key not in self.interrupts]
            if unknown:
                raise UnknownInterruptError(self.thread_id, unknown, pending)
            return named
        if not pending:
            raise NotInterruptedError(self.thread_id, self.status)
        if len(pending) > 1:
            raise AmbiguousResumeError(self.thread_id, pending)
        return {pending[0]: value}

    def _record_answers(self, answers: dict[str, Any], caller: Caller, policy: Oversight) -> None:
        """Record answers to pending interrupts, all checked by their hold points' rules
        before any is recorded."""
        decision = caller.decision or "respond"
        for interrupt_id, value in answers.items():
            hold_points.check_may_decide(self, interrupt_id, caller.actor, policy)  # type: ignore[arg-type]
            shown = caller.payload_digest
            if isinstance(shown, dict):
                shown = shown.get(interrupt_id)
            hold_points.check_answer(
                interrupt_id,
                self.interrupts[interrupt_id],
                decision,
                value,
                caller.reason,
                None if shown is None else str(shown),
            )
        for interrupt_id, value in answers.items():
            self.answer(
                interrupt_id,
                resume=value,
                decision=decision,
                reason=caller.reason,
                actor=caller.actor,
                idempotency_key=caller.idempotency_key,
                run_id=caller.run_id,
                separation_of_duties=policy.separation_of_duties,
                policy_version=policy.policy_version,
            )


def _input_written_first(seen: dict[str, dict[str, Any]]) -> bool:
    """Whether, by the versions a namespace's first checkpoint saw, its run's input was
    the first thing written: a Command's update or goto that LangGraph begins a thread
    with is written before it, and seen by the node it triggers."""
    start = seen.get(START, {}).get(START)
    if start is None:
        return False
    try:
        return all(version >= start for channels in seen.values() for version in channels.values())
    except TypeError:  # versions of two kinds (not HoldpointSaver's): not told apart
        return True


def _schema_of(interrupt: dict[str, Any]) -> dict[str, Any]:
    schema = interrupt.get("response_schema")
    return {} if schema is None else {"response_schema": schema}


def _error_of(value: Any) -> tuple[str, str]:
    """An `__error__` write's type and message (its JSON form: a tagged error, or text)."""
    if isinstance(value, dict) and value.get(TAG) == "error":
        return str(value.get("type") or "Error"), str(value.get("message") or "")
    return "Error", value if isinstance(value, str) else str(value)


def _edit_values(edit_writes: list[SavedWrites] | None, saved: SavedCheckpoint) -> dict[str, Any]:
    """What an edit changed: the state channels its writes set (as the caller gave them),
    else those its checkpoint set."""
    if edit_writes:
        return {
            channel: value
            for writes in edit_writes
            for channel, value in writes.writes
            if is_state_channel(channel)
        }
    changed = {k: v for k, v in saved.values.items() if is_state_channel(k)}
    changed.update({k: {"appended": v} for k, v in saved.grown.items() if is_state_channel(k)})
    return changed
