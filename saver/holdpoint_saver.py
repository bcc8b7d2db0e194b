"""`HoldpointSaver`: LangGraph's checkpointer, on Holdpoint's event store.

    from langgraph.checkpoint.holdpoint import HoldpointSaver
    graph = builder.compile(checkpointer=HoldpointSaver("sqlite:///var/holdpoint.db"))

A real LangGraph graph runs as it always does; what its checkpointer is told becomes the
catalogue's events on the thread's hash chain (domain/record/langgraph_commands.py): a
run's input, each task's writes as its node's completion, interrupts, answers with who
gave them, edits, and each checkpoint as what changed since its parent (a message list
that gained one message records that message). Reading (`get_tuple`, `list`, and so
LangGraph's `get_state` and `get_state_history`) folds the events; no node code runs.
The record's values are JSON an auditor can read (saver/values.py).

What Holdpoint adds to LangGraph's checkpointer contract:

- Who: `config["configurable"]["actor"]` ({"id", "role"}; the local OS user otherwise),
  and with a resume `decision`, `reason`, `idempotency_key` and `payload_digest`, as for
  the native engine. The HTTP server sets them from the authenticated key.
- Strict where LangGraph is silent: a resume write for an interrupt that is not pending,
  one value for several pending interrupts, a resume of a thread with nothing pending,
  and the loser of two racing resumes are refused (the error is raised from the
  write; LangGraph reports it when its run ends) and nothing of them is recorded. The
  hold points' rules (who may decide, separation of duties) apply to a named actor.
- Append-only: `delete_thread`, `delete_for_runs` and `prune` are refused
  (`AppendOnlyError`): nothing leaves the record but by a recorded, policy-bound
  operation, which retention (a later issue) will be.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_id,
    get_checkpoint_metadata,
    writes_sort_key,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from domain.access.actor import resolve_actor
from domain.access.identity import RefusedAttempt
from domain.errors import (
    AmbiguousResumeError,
    HoldpointError,
    NotInterruptedError,
    OversightError,
    RefusedRunError,
    ThreadCancelledError,
    ThreadExistsError,
    ThreadNotFoundError,
    UnknownInterruptError,
)
from domain.history.checkpoints import CheckpointAt, checkpoints_of
from domain.history.forks import branch, check_may_branch
from domain.history.lineage import lineage_events, start_nodes
from domain.oversight import hold_points
from domain.oversight.hold_points import Oversight, is_owner, question_digest
from domain.record.application import Workflows
from domain.record.langgraph_folds import head_values
from domain.record.langgraph_record import (
    ERROR,
    GRAPH_KEY,
    INTERRUPT,
    LANGGRAPH,
    NULL_TASK_ID,
    RESUME,
    START,
    UPDATE_TASK,
    Caller,
    SavedCheckpoint,
    SavedWrites,
    interrupt_ids,
    is_state_channel,
    routes_of,
)
from domain.record.store import open_store
from domain.record.thread import WorkflowThread
from domain.record.thread_state import CANCELLED
from saver import write_order
from saver.refused_runs import RUN_KEY, RefusedRuns
from saver.run_questions import RunQuestions
from saver.threads import CACHED_THREADS, Save, Threads
from saver.values import from_record, to_record

DEFAULT_GRAPH_ID = "langgraph"
# How long a task's writes wait to be committed with the checkpoint that ends their step
# (saver/threads.py, `Threads.commit`): one commit a step, not two. Writes that end a run
# (an interrupt, an error) or come before it (a Command's) do not wait.
LINGER = 0.005
# Saves that branch off a past checkpoint: a run (LangGraph saves a fork first) or an edit.
BRANCHING = frozenset({"fork", "update"})
DURABILITY = "__pregel_durability"  # LangGraph's CONFIG_KEY_DURABILITY, when a run sets one
KNOWN_CHECKPOINT_KEYS = frozenset(
    {"v", "id", "ts", "channel_values", "channel_versions", "versions_seen", "updated_channels"}
)


# A resume refused, by the refusal's code on record (a hold point's rule has its own).
REFUSED_RESUMES: dict[type[HoldpointError], str] = {
    UnknownInterruptError: "stale_interrupt",  # not pending: answered, superseded, never raised
    NotInterruptedError: "stale_interrupt",  # nothing pending
    ThreadCancelledError: "stale_interrupt",
    AmbiguousResumeError: "unknown_interrupt",  # one value for several: which?
}


class AppendOnlyError(HoldpointError, NotImplementedError):
    """Holdpoint's record is append-only: LangGraph's deletions are refused."""


class HoldpointSaver(BaseCheckpointSaver[int]):
    """A LangGraph checkpointer whose storage is Holdpoint's event store.

    Args:
        store: a store URL (`sqlite:///path.db`, `postgresql://...`, `memory://`), an open
            store (`domain.record.store.open_store`), or None: in memory.
        graph_id: the graph its threads are of, when the run's config names none
            (`configurable` or `metadata` "graph_id" or "assistant_id").
        oversight: the hold points' policy for named actors (separation of duties...).
        serde: LangGraph's serializer, kept for what LangGraph asks of it; the record's
            values are Holdpoint's JSON (saver/values.py), never a pickle.
    """

    def __init__(
        self,
        store: str | Workflows | None = None,
        *,
        graph_id: str | None = None,
        oversight: Oversight | None = None,
        serde: SerializerProtocol | None = None,
    ) -> None:
        super().__init__(serde=serde)
        self._owns_store = not isinstance(store, Workflows)
        self.store = store if isinstance(store, Workflows) else open_store(store or "memory://")
        self.graph_id = graph_id
        self.oversight = oversight or Oversight()
        self._threads = Threads(self.store)
        self._answers_lock = threading.Lock()
        self._last: dict[tuple[str, str], tuple[str, dict[str, Any]]] = {}
        self._edits: dict[tuple[str, str, str], list[SavedWrites]] = {}
        self._order = write_order.WriteOrder()
        self._answers: OrderedDict[str, tuple[str, str, set[str]]] = OrderedDict()  # consumed
        self._refused_runs = RefusedRuns()
        self._run_questions = RunQuestions()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """A subclass keeps `task_path` on `put_writes` and `aput_writes`: LangGraph hands a
        task's path only to a saver whose method takes it, and without it the record
        cannot name the node whose writes these are, nor tell when a step's tasks have
        all saved theirs (each checkpoint would wait out the write order's grace)."""
        super().__init_subclass__(**kwargs)
        for name in ("put_writes", "aput_writes"):
            if "task_path" not in inspect.signature(getattr(cls, name)).parameters:
                message = (
                    f"{cls.__name__}.{name} must take task_path (a str, default ''), as "
                    f"HoldpointSaver.{name} does, and pass it on: the record names each "
                    "node by its task's path"
                )
                raise TypeError(message)

    @classmethod
    @contextmanager
    def from_conn_string(cls, conn_string: str, **kwargs: Any) -> Iterator[HoldpointSaver]:
        """A saver on the store at `conn_string`, closed on leaving the block."""
        saver = cls(conn_string, **kwargs)
        try:
            yield saver
        finally:
            saver.close()

    def close(self) -> None:
        """Close the store, if this saver opened it."""
        if self._owns_store:
            self.store.close()

    def __enter__(self) -> HoldpointSaver:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # -- versions ----------------------------------------------------------

    def get_next_version(self, current: int | None, channel: None) -> int:  # noqa: ARG002
        return 1 if current is None else int(current) + 1

    # -- writing -----------------------------------------------------------

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        configurable = config["configurable"]
        thread_id = str(configurable["thread_id"])
        namespace = str(configurable.get("checkpoint_ns", ""))
        parent_id = configurable.get("checkpoint_id")
        merged: dict[str, Any] = dict(get_checkpoint_metadata(config, metadata))
        caller = _caller(config)
        edits = (
            self._edits.pop((thread_id, namespace, parent_id), None)
            if merged.get("source") == "update" and parent_id
            else None
        )
        values = checkpoint["channel_values"]
        seen = to_record({k: dict(v) for k, v in checkpoint["versions_seen"].items()})
        for outer, outer_id in (configurable.get("checkpoint_map") or {}).items():
            if outer != namespace:  # a subgraph's: after the checkpoint its task ran on
                self._after_checkpoint(thread_id, outer, str(outer_id))
        self._order.after_writes(  # and a Command's saves in flight
            thread_id,
            parent_id,
            lambda: (
                not self._awaits_writes(thread_id, namespace, parent_id, merged, seen, new_versions)
            ),
        )

        def record(thread: WorkflowThread, grow: bool) -> None:
            if merged.get("source") in ("loop", "input"):  # of a run that was refused?
                self._refused_runs.check(thread_id, configurable)
            follows = thread.follows_head(namespace, parent_id)
            try:
                if not follows and parent_id and merged.get("source") in BRANCHING:
                    check_may_branch(self.store, thread_id, namespace, parent_id, caller.actor)
                saved = self._saved_checkpoint(
                    thread_id,
                    namespace,
                    parent_id,
                    checkpoint,
                    merged,
                    new_versions,
                    seen,
                    follows,
                    grow,
                    answers_unsaved=configurable.get(DURABILITY) == "exit",
                )
                thread.save_checkpoint(saved, caller, self.oversight, edits)
            except OversightError as error:  # the run goes no further, on either branch
                self._refused_runs.refuse(thread_id, configurable, parent_id or "", error)
                raise

        try:
            with self._order.putting(thread_id, checkpoint["id"]):
                save = self._threads.apply(
                    thread_id, record, self._beginning(thread_id, config), then=checkpoint["id"]
                )
            self._threads.commit(save)
        except RefusedRunError as error:
            self._record_refusal(error, caller, thread_id, action="put")
            raise
        except OversightError as error:  # an edit, a branch or a step the rules refuse
            action = {"update": "update_state", "loop": "put"}.get(
                str(merged.get("source")), "fork"
            )
            self._record_refusal(error, caller, thread_id, action=action)
            raise
        self._last[(thread_id, namespace)] = (
            checkpoint["id"],
            {channel: values[channel] for channel in new_versions if channel in values}
            | {
                channel: value
                for channel, value in self._last.get((thread_id, namespace), ("", {}))[1].items()
                if channel not in new_versions and channel in checkpoint["channel_versions"]
            },
        )
        return {
            "configurable": {
                "thread_id": thread_id,
                "checkpoint_ns": namespace,
                "checkpoint_id": checkpoint["id"],
            }
        }

    def _awaits_writes(
        self,
        thread_id: str,
        namespace: str,
        parent_id: str | None,
        metadata: dict[str, Any],
        seen: dict[str, Any],
        new_versions: ChannelVersions,
    ) -> bool:
        """Whether a checkpoint waits for writes, on the thread at hand: a step's for those
        of the tasks that ran on its parent (`WorkflowThread.awaits_writes`); a namespace's
        first, its input, for a Command's that began it, told by the channels they changed
        beside the input's own (`WorkflowThread.awaits_command`; nothing of a thread not
        on record is). (A run that saves only at its exit saves no writes, and only its
        last checkpoint, a step's, whose parent holds none.)"""
        source = metadata.get("source")
        if source == "input" and parent_id is None and new_versions.keys() - {START}:
            return bool(
                self._threads.read(
                    thread_id,
                    lambda thread: thread is None or thread.awaits_command(namespace),
                    fresh=False,
                )
            )
        if source != "loop":
            return False
        step = int(metadata.get("step", -1))
        return bool(
            self._threads.read(
                thread_id,
                lambda thread: (
                    thread is not None and thread.awaits_writes(namespace, parent_id, step, seen)
                ),
                fresh=False,
            )
        )

    def _saved_checkpoint(
        self,
        thread_id: str,
        namespace: str,
        parent_id: str | None,
        checkpoint: Checkpoint,
        metadata: dict[str, Any],
        new_versions: ChannelVersions,
        seen: dict[str, Any],
        follows: bool,
        grow: bool,
        *,
        answers_unsaved: bool,
    ) -> SavedCheckpoint:
        """`seen`: the checkpoint's versions seen, in JSON form."""
        values = checkpoint["channel_values"]
        last_id, last = self._last.get((thread_id, namespace), (None, {}))
        grown: dict[str, list[Any]] = {}
        encoded: dict[str, Any] = {}
        for channel in new_versions:
            if channel not in values:
                continue
            value = values[channel]
            before = last.get(channel) if grow and follows and last_id == parent_id else None
            if (
                type(value) is list
                and type(before) is list
                and len(value) > len(before)
                and value[: len(before)] == before
            ):
                grown[channel] = to_record(value[len(before) :])
            else:
                encoded[channel] = to_record(value)
        if not follows:  # every value, not only the new ones
            for channel in checkpoint["channel_versions"]:
                if channel in values and channel not in encoded:
                    encoded[channel] = to_record(values[channel])
        return SavedCheckpoint(
            namespace=namespace,
            checkpoint_id=checkpoint["id"],
            parent_id=parent_id,
            source=str(metadata.get("source", "loop")),
            step=int(metadata.get("step", -1)),
            ts=checkpoint["ts"],
            values=encoded,
            grown=grown,
            emptied=[channel for channel in new_versions if channel not in values],
            versions=to_record(dict(checkpoint["channel_versions"])),
            seen=seen,
            metadata=to_record(dict(metadata)),
            form=_form(checkpoint),
            answers_unsaved=answers_unsaved,
        )

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        configurable = config["configurable"]
        thread_id = str(configurable["thread_id"])
        namespace = str(configurable.get("checkpoint_ns", ""))
        checkpoint_id = str(configurable["checkpoint_id"])
        saved = SavedWrites(
            namespace=namespace,
            checkpoint_id=checkpoint_id,
            task_id=task_id,
            task_path=task_path,
            writes=[(channel, to_record(value)) for channel, value in writes],
        )
        if task_path.startswith(UPDATE_TASK):  # update_state's: recorded with its checkpoint
            self._edits.setdefault((thread_id, namespace, checkpoint_id), []).append(saved)
            return
        caller = _caller(config)
        try:
            self._save_writes(thread_id, saved, caller, config)
        except RefusedRunError as error:
            self._record_refusal(error, caller, thread_id, action="put_writes")
            raise

    def _save_writes(
        self, thread_id: str, saved: SavedWrites, caller: Caller, config: RunnableConfig
    ) -> None:
        """`put_writes` of writes that are not update_state's."""
        namespace, checkpoint_id, writes = saved.namespace, saved.checkpoint_id, saved.writes
        resumes = any(channel == RESUME for channel, _ in writes)
        command = saved.task_id == NULL_TASK_ID
        ends_step = command or any(channel in (INTERRUPT, ERROR) for channel, _ in writes)
        # A refused run's writes are refused, checked as they park (under the thread's
        # lock, where a run is refused: the checkpoint of a refused run never comes) or
        # else before they are applied.
        configurable = config["configurable"]
        parked = None
        with self._order.writing(thread_id, checkpoint_id, command=command):
            if not (resumes or ends_step):  # a task's writes, before their checkpoint?

                def record(thread: WorkflowThread, _: bool) -> HoldpointError | None:
                    ran_on = self._refused_runs.check(thread_id, configurable, saved)
                    return thread.save_writes(saved, caller, self.oversight, ran_on=ran_on)

                parked = self._threads.park(
                    thread_id,
                    record,
                    self._beginning(thread_id, config),
                    checkpoint_id,
                    lambda thread: (
                        _before(thread, namespace, checkpoint_id)
                        and not self._refused_runs.refuses(thread_id, configurable, saved)
                    ),
                )
            if parked is None:
                self._refused_runs.check(thread_id, configurable, saved)
                save = self._apply_writes(
                    thread_id, saved, caller, config, resumes=resumes, command=command
                )
        if parked is not None:
            # Applied right after the checkpoint, by its save, and committed with it; no
            # longer counted in flight, so the next checkpoint does not wait for this
            # thread to wake (`WriteOrder.after_writes` waits for the save that applies
            # it). Up to the write order's TIMEOUT, without its grace: LangGraph submits
            # a checkpoint's save before it runs the tasks whose writes park on it, and
            # under load that save may start later than the grace.
            self._threads.commit_parked(parked, checkpoint_id, write_order.TIMEOUT)
            return
        try:
            refused = self._threads.commit(save, linger=0.0 if ends_step else LINGER).result
        except HoldpointError as error:  # applied again on another writer's answer: refused
            if not resumes:
                raise
            refused = error
        if refused is not None:  # answers refused at the commit: on record, raised
            self._record_refusal(refused, caller, thread_id)
            raise refused

    def _apply_writes(
        self,
        thread_id: str,
        saved: SavedWrites,
        caller: Caller,
        config: RunnableConfig,
        *,
        resumes: bool,
        command: bool,
    ) -> Save:
        """Apply writes that do not park (`put_writes`), once in order: after their
        checkpoint, and a task's answers (`resumes`) after the resume that gave them (a
        `command`'s). A Command's on a thread with no checkpoint saved in its namespace
        wait for none: LangGraph saves them on the empty checkpoint it starts a thread
        from, which it never saves (the thread's first checkpoint, its input, has no
        parent)."""
        if not (command and self._unbegun(thread_id, saved.namespace)):
            self._after_checkpoint(thread_id, saved.namespace, saved.checkpoint_id)
        if resumes and not command:
            self._order.after_answer(thread_id, lambda: not self._questions_of(thread_id, saved))

        def record(thread: WorkflowThread, _: bool) -> HoldpointError | None:
            """Under the thread's lock, so that a Command's resume and the task that
            consumed it, saved in either order, see each other (`_consumed`)."""
            if command:
                answered = resumes and self._consumed(thread_id, saved)
                asked_since = self._run_questions.of(thread_id, config["configurable"])
                try:
                    self._check_goto(thread_id, saved, caller, config["configurable"])
                    return thread.save_writes(
                        saved, caller, self.oversight, answered=answered, asked_since=asked_since
                    )
                except HoldpointError as error:  # the run goes no further
                    self._refused_runs.refuse(
                        thread_id, config["configurable"], saved.checkpoint_id, error
                    )
                    raise
            if resumes:  # applied again on a fresh read: what it answered may not hold
                self._forget_consumed(thread_id, saved)
            ran_on = self._refused_runs.check(thread_id, config["configurable"], saved)
            answers = resumes and bool(thread.questions_of(saved))
            refused = thread.save_writes(saved, caller, self.oversight, ran_on=ran_on)
            asked = [
                asked_id
                for channel, value in saved.writes
                if channel == INTERRUPT
                for asked_id in interrupt_ids(value)
            ]
            if asked:  # by this run: a Command of it saved after them is not held to them
                self._run_questions.asked(thread_id, config["configurable"], asked)
            if answers and refused is None:  # it recorded the answers it consumed
                self._remember_consumed(thread_id, saved)
            if refused is not None:  # answers of a resume map: the run goes no further
                self._refused_runs.refuse(
                    thread_id, config["configurable"], saved.checkpoint_id, refused
                )
            return refused

        try:
            save = self._threads.apply(thread_id, record, self._beginning(thread_id, config))
        except HoldpointError as error:
            if resumes and command:
                self._order.answering(thread_id, refused=True)
            if command:
                action = "Command(resume=...)" if resumes else _command_kind(saved)
                self._record_refusal(error, caller, thread_id, action=action)
            raise
        if resumes and command:
            self._order.answering(thread_id, refused=False)
        return save

    def _check_goto(
        self, thread_id: str, saved: SavedWrites, caller: Caller, configurable: dict[str, Any]
    ) -> None:
        """A Command's goto routes the thread only where the graph starts it: anywhere else
        it skips the nodes on the way, and their hold points (`hold_points.check_goto`).
        Where the graph starts a thread is what its server says (`GRAPH_KEY`, from the
        graph's edges), else where it started this one on record (`start_nodes`)."""
        goto = routes_of(saved.writes)
        if not goto or is_owner(caller.actor):
            return
        starts = (configurable.get(GRAPH_KEY) or {}).get("starts")
        if not isinstance(starts, list):
            starts = start_nodes(self.store, thread_id)
        hold_points.check_goto(caller.actor, goto, starts)

    def approve(self, config: RunnableConfig, interrupt_id: str | None = None) -> None:
        """Record the approval of a pending interrupt that needs approvals by several
        principals (four eyes), by `config`'s actor with its reason, resuming nothing.

        LangGraph runs the node on any resume it is handed, so from Python the approvals
        before the last are given here, and the last as `Command(resume=...)`; a resume
        short of them is refused when the run ends, after the node ran
        (ApprovalsOutstandingError). Holdpoint's API holds a decision itself.
        `interrupt_id` may be left out when one is pending. The hold points' rules apply
        as to a resume, and their refusals are recorded; the last approval is refused
        here (InvalidUpdateError), recording nothing.
        """
        thread_id = str(config["configurable"]["thread_id"])
        caller = _caller(config)

        def absent() -> WorkflowThread:
            raise ThreadNotFoundError(thread_id)

        try:  # refused when applied, or at the commit (another approval was recorded first)
            self._threads.save(
                thread_id,
                lambda thread, _: thread.concur(interrupt_id, caller, self.oversight),
                absent,
            )
        except HoldpointError as error:
            self._record_refusal(error, caller, thread_id, action="approve")
            raise

    def _after_checkpoint(self, thread_id: str, namespace: str, checkpoint_id: str) -> None:
        """Wait until the namespace's checkpoint is saved (`WriteOrder.after_checkpoint`):
        LangGraph saves a step's checkpoint in the background while the step's tasks run,
        so a subgraph's checkpoints, saved by its task, may begin first."""
        self._order.after_checkpoint(
            thread_id, checkpoint_id, lambda: not self._ahead(thread_id, namespace, checkpoint_id)
        )

    def _unbegun(self, thread_id: str, namespace: str) -> bool:
        """Whether no checkpoint of the namespace is saved on the thread yet."""
        return bool(
            self._threads.read(
                thread_id,
                lambda thread: thread is None or namespace not in thread.heads,
                fresh=False,
            )
        )

    def _ahead(self, thread_id: str, namespace: str, checkpoint_id: str) -> bool:
        """Whether a checkpoint is later than the namespace's latest one saved (its own save
        not yet recorded)."""
        return bool(
            self._threads.read(
                thread_id, lambda thread: _before(thread, namespace, checkpoint_id), fresh=False
            )
        )

    def _questions_of(self, thread_id: str, saved: SavedWrites) -> list[str]:
        """The pending questions a task's answers go to (`WorkflowThread.questions_of`)."""

        def pending(thread: WorkflowThread | None) -> list[str]:
            return [] if thread is None else list(thread.questions_of(saved))

        return list(self._threads.read(thread_id, pending, fresh=False))

    def _remember_consumed(self, thread_id: str, saved: SavedWrites) -> None:
        """What a task's writes answered, on their checkpoint: a Command's resume on it saved
        after them is matched to it (`_consumed`), not refused as answering nothing."""
        values = [v for channel, v in saved.writes if channel == RESUME]
        digests = {question_digest(value) for value in (values[-1] if values else [])}
        with self._answers_lock:
            self._answers[thread_id] = (saved.checkpoint_id, saved.task_id, digests)
            self._answers.move_to_end(thread_id)
            if len(self._answers) > CACHED_THREADS:
                self._answers.popitem(last=False)

    def _forget_consumed(self, thread_id: str, saved: SavedWrites) -> None:
        """Forget what a task's writes answered, as they are applied again: at the commit,
        on another writer's record, they may answer nothing or be refused."""
        with self._answers_lock:
            remembered = self._answers.get(thread_id)
            if remembered is not None and remembered[:2] == (saved.checkpoint_id, saved.task_id):
                del self._answers[thread_id]

    def _consumed(self, thread_id: str, saved: SavedWrites) -> bool:
        """Whether a Command's resume was already recorded as an answer from the writes of
        the task that consumed it, on the same checkpoint."""
        with self._answers_lock:
            remembered = self._answers.get(thread_id)
        if remembered is None or remembered[0] != saved.checkpoint_id:
            return False
        resume = next(value for channel, value in saved.writes if channel == RESUME)
        return question_digest(resume) in remembered[2]

    def _record_refusal(
        self,
        error: HoldpointError,
        caller: Caller,
        thread_id: str,
        action: str = "Command(resume=...)",
    ) -> None:
        """Put a refused resume or approval on record (an AccessRefused, listed with the
        API's)."""
        cause = error.refusal if isinstance(error, RefusedRunError) else error
        reason = (
            cause.reason if isinstance(cause, OversightError) else REFUSED_RESUMES.get(type(cause))
        )
        if reason is None:
            return
        attempt = RefusedAttempt.refuse(
            actor=caller.actor,
            action=action,
            target=thread_id,
            reason=reason,
            message=str(error),
        )
        self.store.save(attempt)

    def _beginning(self, thread_id: str, config: RunnableConfig) -> Callable[[], WorkflowThread]:
        """How a run with `config` begins the thread, if it has none yet."""
        return lambda: self._begin(thread_id, config)

    def _begin(self, thread_id: str, config: RunnableConfig) -> WorkflowThread:
        configurable = config.get("configurable") or {}
        metadata = config.get("metadata") or {}
        graph_id = (
            configurable.get("graph_id")
            or metadata.get("graph_id")
            or configurable.get("assistant_id")
            or metadata.get("assistant_id")
            or self.graph_id
            or DEFAULT_GRAPH_ID
        )
        graph = configurable.get(GRAPH_KEY) or {}
        return WorkflowThread.begin(
            thread_id=thread_id,
            graph_id=str(graph_id),
            graph_digest=str(graph.get("digest", "")),
            channels=dict(graph.get("channels", {})),
            metadata=to_record(dict(graph.get("metadata", {}))),
            actor=resolve_actor(configurable.get("actor")),
        )

    def position(self, thread_id: str) -> int | None:
        """The log position of the last event this saver recorded on the thread (what a
        reader waits for, to read its own writes), if it recorded any."""
        return self._threads.position(thread_id)

    # -- reading -----------------------------------------------------------

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        configurable = config["configurable"]
        thread_id = str(configurable["thread_id"])
        namespace = str(configurable.get("checkpoint_ns", ""))
        checkpoint_id = get_checkpoint_id(config)

        running = RUN_KEY in configurable  # a run's read: before any of its nodes runs

        def latest(thread: WorkflowThread | None) -> tuple[bool, CheckpointTuple | None]:
            if thread is None:
                return True, None
            thread.check_engine(LANGGRAPH)  # LangGraph would take it for a new thread
            if running and thread.status == CANCELLED:  # stopped: read, never run again
                raise ThreadCancelledError(thread_id)
            head = thread.heads.get(namespace)
            if head is not None and checkpoint_id in (None, head["id"]):
                values = head_values(thread, namespace)
                return True, self._tuple(thread_id, namespace, head, values)
            return checkpoint_id is None, None

        answered: bool
        found: CheckpointTuple | None
        answered, found = self._threads.read(thread_id, latest)
        if not answered:
            for at in checkpoints_of(lineage_events(self.store, thread_id)):
                if at.namespace == namespace and at.checkpoint_id == checkpoint_id:
                    found = self._tuple(thread_id, namespace, at.head, at.values)
                    break
        if found is not None and checkpoint_id is not None:  # the config as it was asked for,
            found = found._replace(config=config)  # as LangGraph's own savers answer it
        return found

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,  # noqa: A002 - LangGraph's name
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        configurable = (config or {}).get("configurable") or {}
        namespace = configurable.get("checkpoint_ns")
        wanted_id = configurable.get("checkpoint_id")
        before_id = get_checkpoint_id(before) if before else None
        if "thread_id" in configurable:
            thread_ids: Iterator[str] = iter([str(configurable["thread_id"])])
        else:
            thread_ids = self._thread_ids()
        for thread_id in thread_ids:
            thread = self.store.thread(thread_id)
            if thread is None or thread.engine != LANGGRAPH:
                continue
            found = checkpoints_of(lineage_events(self.store, thread_id))
            by_namespace: dict[str, list[CheckpointAt]] = {}
            for at in found:
                by_namespace.setdefault(at.namespace, []).append(at)
            for ns, checkpoints in by_namespace.items():
                if namespace is not None and ns != namespace:
                    continue
                for at in sorted(checkpoints, key=lambda c: c.checkpoint_id, reverse=True):
                    if wanted_id and at.checkpoint_id != wanted_id:
                        continue
                    if before_id and at.checkpoint_id >= before_id:
                        continue
                    metadata = from_record(at.head["metadata"])
                    if filter and not all(metadata.get(k) == v for k, v in filter.items()):
                        continue
                    if limit is not None:
                        if limit <= 0:
                            return
                        limit -= 1
                    yield self._tuple(thread_id, ns, at.head, at.values)

    def _thread_ids(self) -> Iterator[str]:
        """Every real LangGraph graph's thread in the store, copies too, in the order they
        began."""
        topics = [
            WorkflowThread.ThreadStarted.TOPIC,  # type: ignore[attr-defined]
            WorkflowThread.ThreadForked.TOPIC,  # type: ignore[attr-defined]
        ]
        start = 1
        while True:
            page = self.store.recorder.select_notifications(start=start, limit=500, topics=topics)
            if not page:
                return
            for notification in page:
                event: Any = self.store.mapper.to_domain_event(notification)
                if getattr(event, "engine", None) == LANGGRAPH:
                    yield str(event.thread_id)
            start = page[-1].id + 1

    def _tuple(
        self, thread_id: str, namespace: str, head: dict[str, Any], values: dict[str, Any]
    ) -> CheckpointTuple:
        form = dict(head["form"])
        checkpoint: dict[str, Any] = {
            **{key: from_record(value) for key, value in form.get("extra", {}).items()},
            "v": form.get("v", 1),
            "id": head["id"],
            "ts": head["ts"],
            "channel_values": {channel: from_record(value) for channel, value in values.items()},
            "channel_versions": from_record(head["versions"]),
            "versions_seen": from_record(head["seen"]),
            "updated_channels": form.get("updated_channels"),
        }
        writes = sorted(head["writes"], key=lambda w: writes_sort_key(w[3], w[0], w[4]))
        parent = head["parent"]
        return CheckpointTuple(
            config={
                "configurable": {
                    "thread_id": thread_id,
                    "checkpoint_ns": namespace,
                    "checkpoint_id": head["id"],
                }
            },
            checkpoint=checkpoint,  # type: ignore[arg-type]
            metadata=from_record(head["metadata"]),
            parent_config=(
                {
                    "configurable": {
                        "thread_id": thread_id,
                        "checkpoint_ns": namespace,
                        "checkpoint_id": parent,
                    }
                }
                if parent
                else None
            ),
            pending_writes=[(w[0], w[1], from_record(w[2])) for w in writes],
        )

    # -- copying -----------------------------------------------------------

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Start `target_thread_id` as `source_thread_id` stands: a fork at its head, whose
        ThreadForked names the source, its version and hash, and carries its latest
        checkpoints; the earlier ones are read through the source. Every checkpoint, its
        metadata and pending writes read the same on the copy, under the same ids.

        Recorded as by the local user (as a Python caller that names no actor). Refused:
        a source never recorded (ThreadNotFoundError), a target that exists
        (ThreadExistsError), a source paused at a question or in the middle of a run
        (LangGraphForkError: the copy's question would be the source's own)."""
        source = self.store.thread(source_thread_id)
        if source is None:
            raise ThreadNotFoundError(source_thread_id)
        source.check_engine(LANGGRAPH)
        copied = branch(self.store, source, resolve_actor(None), target_thread_id)

        def record(thread: WorkflowThread, _grow: bool) -> None:
            if thread is not copied:  # another writer began the target meanwhile
                raise ThreadExistsError(target_thread_id)

        self._threads.save(target_thread_id, record, lambda: copied)

    # -- what the record refuses --------------------------------------------

    def delete_thread(self, thread_id: str) -> None:
        _refuse_deletion(f"delete thread {thread_id!r}")

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        _refuse_deletion(f"delete the checkpoints of runs {list(run_ids)}")

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        _refuse_deletion(f"prune threads {list(thread_ids)} ({strategy})")

    # -- async: the same, off the event loop ---------------------------------------

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await asyncio.to_thread(self.get_tuple, config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,  # noqa: A002 - LangGraph's name
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        found = await asyncio.to_thread(
            lambda: list(self.list(config, filter=filter, before=before, limit=limit))
        )
        for item in found:
            yield item

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return await asyncio.to_thread(self.put, config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        await asyncio.to_thread(self.put_writes, config, writes, task_id, task_path)

    async def aapprove(self, config: RunnableConfig, interrupt_id: str | None = None) -> None:
        await asyncio.to_thread(self.approve, config, interrupt_id)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        await asyncio.to_thread(self.copy_thread, source_thread_id, target_thread_id)

    async def adelete_thread(self, thread_id: str) -> None:
        self.delete_thread(thread_id)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        self.delete_for_runs(run_ids)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        self.prune(thread_ids, strategy=strategy)


def _refuse_deletion(what: str) -> None:
    msg = (
        f"HoldpointSaver cannot {what}: Holdpoint's record is append-only, so that "
        "nothing leaves it but by a recorded, policy-bound operation (retention, a "
        "later issue). The checkpoints stay readable and verifiable."
    )
    raise AppendOnlyError(msg)


def _form(checkpoint: Checkpoint) -> dict[str, Any]:
    """What a checkpoint holds beside its values and versions: its format's version, the
    channels it updated, and any key this saver does not know (kept as given)."""
    extra = {
        key: to_record(value)
        for key, value in checkpoint.items()
        if key not in KNOWN_CHECKPOINT_KEYS
    }
    return {
        "v": checkpoint.get("v", 1),
        "updated_channels": checkpoint.get("updated_channels"),
        **({"extra": extra} if extra else {}),
    }


def _before(thread: WorkflowThread | None, namespace: str, checkpoint_id: str) -> bool:
    """Whether the thread has not saved the namespace's checkpoint yet (nor a later one)."""
    head = None if thread is None else thread.heads.get(namespace)
    return head is None or checkpoint_id > head["id"]


def _command_kind(saved: SavedWrites) -> str:
    """What a Command without a resume did, as its refusal names it."""
    parts = []
    if any(channel != RESUME and is_state_channel(channel) for channel, _ in saved.writes):
        parts.append("update=...")
    if routes_of(saved.writes):
        parts.append("goto=...")
    return f"Command({', '.join(parts)})"


def _caller(config: RunnableConfig) -> Caller:
    """Who writes, from the run's config (`configurable`: actor, decision, reason...)."""
    configurable = config.get("configurable") or {}
    metadata = config.get("metadata") or {}
    run_id = configurable.get("run_id") or metadata.get("run_id")
    reason = configurable.get("reason")
    key = configurable.get("idempotency_key")
    return Caller(
        actor=resolve_actor(configurable.get("actor")),
        configured_run_id=None if run_id is None else str(run_id),
        decision=None if configurable.get("decision") is None else str(configurable["decision"]),
        reason=None if reason is None else str(reason),
        idempotency_key=None if key is None else str(key),
        as_node=configurable.get("as_node"),
        payload_digest=configurable.get("payload_digest"),
    )
