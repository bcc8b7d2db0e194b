"""CompiledStateGraph: run a graph, read its threads, edit their state."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from domain.access.actor import resolve_actor
from domain.engine.runtime import REQUEST_KEY, Run
from domain.errors import (
    GraphDefinitionError,
    InvalidUpdateError,
    MissingThreadIdError,
    NoCheckpointerError,
    OversightError,
    UnsupportedFeatureError,
)
from domain.graph.constants import END, START
from domain.graph.digest import graph_digest
from domain.graph.unsupported import (
    refuse_run_options,
    refuse_unsupported,
    unsupported_message,
)
from domain.history import state_snapshots as snapshots
from domain.history.forks import branch
from domain.oversight import hold_points
from domain.oversight.hold_points import Oversight
from domain.privacy.personal import Personal
from domain.record.application import Workflows
from domain.record.hashing import to_json
from domain.record.langgraph_record import NATIVE
from domain.record.schema import (
    as_state,
    as_update,
    initial_values,
    register_reducer,
    schema_as_record,
)
from domain.record.supersteps import fold_update
from domain.record.thread import WorkflowThread
from domain.types import Command, StateSnapshot, interrupt_policy

if TYPE_CHECKING:
    from domain.graph.definition import Branch, GraphDefinition

StreamMode = str | list[str] | tuple[str, ...]
_MODES = ("values", "updates")
# LangGraph's other stream modes, which the native engine does not stream.
LANGGRAPH_MODES = ("messages", "custom", "debug", "checkpoints", "tasks")


def _modes(stream_mode: StreamMode) -> tuple[str, ...]:
    modes = (stream_mode,) if isinstance(stream_mode, str) else tuple(stream_mode)
    unknown = [mode for mode in modes if mode not in _MODES]
    if unknown and unknown[0] in LANGGRAPH_MODES:
        given = f"stream_mode={unknown[0]!r}"
        raise UnsupportedFeatureError(unsupported_message("stream()", given))
    if unknown:
        msg = f"Unknown stream_mode {unknown[0]!r}: use one of {', '.join(_MODES)}"
        raise ValueError(msg)
    return modes


class CompiledStateGraph:
    """A graph bound to a checkpointer: LangGraph's run and read methods."""

    def __init__(
        self,
        builder: GraphDefinition,
        checkpointer: Any,
        graph_id: str,
        personal: Personal | None = None,
    ) -> None:
        if checkpointer is not None and not isinstance(checkpointer, Workflows):
            msg = (
                "checkpointer must be a Holdpoint store: InMemorySaver() or "
                f"domain.record.store.open_store(url), not {type(checkpointer).__name__}"
            )
            raise GraphDefinitionError(msg)
        self.builder = builder
        self.checkpointer: Workflows | None = checkpointer
        self.graph_id = graph_id
        self.personal = personal  # a server compiling this graph on its store keeps it
        if personal is not None and checkpointer is not None:
            checkpointer.declare_personal(graph_id, personal)
        self.name = graph_id
        # LangGraph's attribute: seconds each node may run (None: no limit); set it after compile().
        self.step_timeout: float | None = None
        self._default_deadline: dict[str, Any] | None = None  # see set_interrupt_deadline
        self.oversight = Oversight()  # see set_oversight
        self.state_schema = builder.state_schema
        self.digest = graph_digest(builder)
        self.channel_record = schema_as_record(builder.channels)
        self.initial = initial_values(builder.channels)
        self.waiting_edges = {end: list(starts) for starts, end in builder.waiting_edges}
        self._edges_from: dict[str, list[str]] = {}
        for start, end in builder.edges:
            self._edges_from.setdefault(start, []).append(end)
        for channel in builder.channels.values():
            if channel.reducer is not None and channel.reducer_name is not None:
                register_reducer(channel.reducer_name, channel.reducer)

    def set_interrupt_deadline(
        self, deadline: float | timedelta | None, on_expiry: str = "reject"
    ) -> None:
        """Give this graph's interrupts a deadline when their `interrupt()` call gives none.

        `deadline` (seconds or a timedelta) and `on_expiry` mean what they mean
        for `interrupt()`; a call's own deadline wins. None removes the default.
        Refuses a deadline that is not positive or an unknown rule at once.
        """
        if deadline is None:
            self._default_deadline = None
            return
        policy = interrupt_policy(None, deadline, on_expiry)
        self._default_deadline = {key: policy[key] for key in ("deadline_seconds", "on_expiry")}

    def set_oversight(
        self,
        *,
        separation_of_duties: bool | None = None,
        approvals: int | None = None,
        amount_field: str | None = None,
        policy_version: int | None = None,
    ) -> None:
        """The hold points' policy for this graph's threads (domain/oversight/hold_points.py):
        `separation_of_duties` (default on: no one who shaped what is decided may decide
        it) and `approvals`, the distinct approvals each interrupt needs when its
        `interrupt()` call names no number (default 1; 2 for four eyes); `amount_field`,
        the payload field (a dotted path) holding the amount a decision is about, which a
        key's `max_amount` limits (domain/access/scope.py). The policy in force is
        recorded on the events it governs. `policy_version`: the version of the policy on
        record this now is (a server sets it, service/policy_in_force.py); any call
        without it leaves none, as the record no longer says what is in force."""
        current = self.oversight
        self.oversight = Oversight(
            separation_of_duties=current.separation_of_duties
            if separation_of_duties is None
            else bool(separation_of_duties),
            approvals=current.approvals if approvals is None else approvals,
            amount_field=current.amount_field if amount_field is None else amount_field,
            policy_version=policy_version,
        )

    def adopt_settings(self, other: CompiledStateGraph) -> None:
        """Take what `other` was given after its compile(): `step_timeout`, the
        interrupts' default deadline and the oversight policy (a server recompiles a
        graph on its own store)."""
        self.step_timeout = other.step_timeout
        self._default_deadline = other._default_deadline
        self.oversight = other.oversight

    def interrupt_policy(self, policy: dict[str, Any]) -> dict[str, Any]:
        """An interrupt's policy as recorded: the call's, with the graph's deadline and
        approvals where it gave none."""
        if self.oversight.approvals > 1 and "approvals" not in policy:
            policy = {**policy, "approvals": self.oversight.approvals}
        if self._default_deadline is None or policy.get("deadline_seconds") is not None:
            return policy
        return {**policy, **self._default_deadline}

    # -- running -------------------------------------------------------

    def invoke(
        self,
        input: Any,  # noqa: A002 - LangGraph's parameter name
        config: dict[str, Any] | None = None,
        *,
        context: Any = None,
        **options: Any,
    ) -> dict[str, Any]:
        """Run until the graph ends or pauses; return the values (and `__interrupt__`).
        `context`: what nodes taking a `runtime` get as `runtime.context`; `options`:
        LangGraph's other run arguments, refused unless they ask what the engine does
        (`refuse_run_options`)."""
        refuse_run_options("invoke()", options)
        run = Run(self, config, (), context)
        for _chunk in run.stream(input):
            pass
        return run.result()

    def stream(
        self,
        input: Any,  # noqa: A002
        config: dict[str, Any] | None = None,
        *,
        context: Any = None,
        stream_mode: StreamMode = "updates",
        **options: Any,
    ) -> Iterator[Any]:
        """Yield each node's update (the default, as LangGraph's StateGraph streams), or the
        values after each step."""
        refuse_run_options("stream()", options)
        modes = _modes(stream_mode)
        for mode, chunk in Run(self, config, modes, context).stream(input):
            yield chunk if isinstance(stream_mode, str) else (mode, chunk)

    async def ainvoke(
        self,
        input: Any,  # noqa: A002
        config: dict[str, Any] | None = None,
        *,
        context: Any = None,
        **options: Any,
    ) -> dict[str, Any]:
        refuse_run_options("ainvoke()", options)
        run = Run(self, config, (), context)
        async for _chunk in run.astream(input):
            pass
        return run.result()

    async def astream(
        self,
        input: Any,  # noqa: A002
        config: dict[str, Any] | None = None,
        *,
        context: Any = None,
        stream_mode: StreamMode = "updates",
        **options: Any,
    ) -> AsyncIterator[Any]:
        refuse_run_options("astream()", options)
        modes = _modes(stream_mode)
        async for mode, chunk in Run(self, config, modes, context).astream(input):
            yield chunk if isinstance(stream_mode, str) else (mode, chunk)

    # -- reading -------------------------------------------------------

    def get_state(self, config: dict[str, Any], *, subgraphs: bool = False) -> StateSnapshot:
        """The thread's state now, or at `configurable.checkpoint_id`."""
        refuse_unsupported("get_state()", {"subgraphs": subgraphs})
        return snapshots.get_state(self._store(), config)

    def get_state_history(
        self,
        config: dict[str, Any],
        *,
        filter: dict[str, Any] | None = None,  # noqa: A002
        before: dict[str, Any] | None = None,
        limit: int | None = None,
    ) -> Iterator[StateSnapshot]:
        """The thread's checkpoints, newest first."""
        yield from snapshots.get_state_history(
            self._store(), config, filter=filter, before=before, limit=limit
        )

    async def aget_state(self, config: dict[str, Any], *, subgraphs: bool = False) -> StateSnapshot:
        return self.get_state(config, subgraphs=subgraphs)

    async def aget_state_history(
        self, config: dict[str, Any], **kwargs: Any
    ) -> AsyncIterator[StateSnapshot]:
        for snapshot in self.get_state_history(config, **kwargs):
            yield snapshot

    # -- editing -------------------------------------------------------

    def update_state(
        self, config: dict[str, Any], values: Any, as_node: str | None = None
    ) -> dict[str, Any]:
        """Record a human's edit of the state (StateEdited); return its checkpoint config.

        Where a hold point is at stake the edit obeys its rules (domain/oversight/hold_points.py):
        at a standing hold point only who may decide it edits; an edit `as_node` is a
        decision about the flow (a deciding role, `configurable.reason`, separation of
        duties), recorded with decision "edit". A refused edit raises OversightError
        and records only the refusal.
        """
        store = self._store()
        configurable = config.get("configurable") or {}
        actor = resolve_actor(configurable.get("actor"))
        try:
            return self._update_state(store, config, values, as_node, actor)
        except OversightError as error:
            thread_id = str(configurable.get("thread_id"))
            request = configurable.get(REQUEST_KEY)
            store.record_refusal(error, actor, "update_state", thread_id, request)
            raise

    def _update_state(
        self,
        store: Workflows,
        config: dict[str, Any],
        values: Any,
        as_node: str | None,
        actor: dict[str, Any],
    ) -> dict[str, Any]:
        configurable = config.get("configurable") or {}
        thread_id = configurable.get("thread_id")
        if not thread_id:
            raise MissingThreadIdError
        if as_node == END:
            msg = (
                "update_state as_node __end__ (ending a thread where it stands) is a "
                "cancellation at a hold point: call the store's cancel(thread_id, actor, "
                "reason), or over HTTP update the state with values null as __end__"
            )
            raise InvalidUpdateError(msg)
        if as_node is not None and as_node not in self.builder.nodes and as_node != START:
            msg = f"Node {as_node} does not exist"
            raise InvalidUpdateError(msg)
        update = as_update(values) if values is not None else {}
        if update is None:
            msg = f"update_state values must be a dict, not {type(values).__name__}"
            raise InvalidUpdateError(msg)
        update = self.filter_update(update, "The state update")
        reason = configurable.get("reason")
        reason = None if reason is None else to_json(str(reason), "The reason")
        thread = store.thread(thread_id)
        if thread is not None:
            thread.check_engine(NATIVE)
        wanted = configurable.get("checkpoint_id")
        if thread is not None and wanted and not snapshots.is_current_checkpoint(thread, wanted):
            source = snapshots.load_checkpoint(store, thread_id, wanted)
            thread = branch(store, source, actor, configurable.get("fork_thread_id"))
        if thread is None:
            thread = self.start_thread(thread_id, config, actor)
            as_node = as_node or START
        snapshots.check_writable(thread)
        hold_points.check_edit(thread, actor, self.oversight, as_node, reason)
        decides_flow = as_node not in (None, START)
        next_nodes = None
        if as_node is not None and not thread.next:
            next_nodes = self.routes(as_node, thread.values, update)
        thread.edit(
            update,
            actor,
            reason,
            as_node=as_node,
            next_nodes=next_nodes,
            decision="edit" if decides_flow else None,
            separation_of_duties=self.oversight.separation_of_duties if decides_flow else None,
        )
        store.record(thread)
        return snapshots.checkpoint_config(thread)

    # -- what the runtime asks of the graph ----------------------------

    def start_thread(
        self, thread_id: str, config: dict[str, Any], actor: dict[str, Any]
    ) -> WorkflowThread:
        metadata = to_json(config.get("metadata") or {}, "config['metadata']")
        return WorkflowThread.start(
            thread_id=thread_id,
            graph_id=self.graph_id,
            graph_digest=self.digest,
            channels=self.channel_record,
            initial=self.initial,
            waiting_edges=self.waiting_edges,
            metadata=metadata,
            actor=actor,
            protector=None
            if self.checkpointer is None
            else self.checkpointer.protector_for(self.graph_id),
        )

    def filter_update(self, values: dict[str, Any], what: str) -> dict[str, Any]:
        """The update's keys that the state has, as plain JSON.

        Keys the state does not declare are dropped, as LangGraph drops them.
        """
        channels = self.channel_record
        update = {key: value for key, value in values.items() if key in channels}
        return to_json(update, what)  # type: ignore[no-any-return]

    def node_update(self, node: str, returned: Any) -> tuple[dict[str, Any], list[str]]:
        """A node's return value as (update, goto)."""
        goto: list[str] = []
        if isinstance(returned, Command):
            goto = returned.goto_nodes()
            returned = returned.update
        if returned is None:
            return {}, goto
        update = as_update(returned)
        if update is None:
            msg = (
                f"Node {node!r} returned {type(returned).__name__}: expected a dict of "
                "state updates, a Command, or None"
            )
            raise InvalidUpdateError(msg)
        return self.filter_update(update, f"The update of node {node!r}"), goto

    def routes(
        self,
        node: str,
        base: dict[str, Any],
        update: dict[str, Any],
        goto: list[str] | None = None,
    ) -> list[str]:
        """Where `node` leads: static edges, conditional edges, then `goto`."""
        targets = list(self._edges_from.get(node, ()))
        branches = self.builder.branches.get(node)
        if branches:
            view = dict(base)
            fold_update(view, update, self.channel_record)
            state = as_state(self.state_schema, view)
            for branch in branches:
                targets.extend(self._branch_targets(node, branch, state))
        if goto:
            targets.extend(goto)
        return self.check_targets(targets, f"The routes of node {node!r}")

    def _branch_targets(self, node: str, branch: Branch, state: Any) -> list[str]:
        result = branch.path(state)
        results = result if isinstance(result, list | tuple) else [result]
        if branch.path_map is None:
            return [str(r) for r in results]
        targets = []
        for r in results:
            if r not in branch.path_map:
                msg = (
                    f"The conditional edge of node {node!r} returned {r!r}, "
                    "which its path map lacks"
                )
                raise InvalidUpdateError(msg)
            targets.append(branch.path_map[r])
        return targets

    def check_targets(self, targets: list[str], what: str) -> list[str]:
        """`targets` without END and repeats; an unknown node is an error."""
        routes = []
        for target in targets:
            if target == END:
                continue
            if target not in self.builder.nodes:
                msg = f"{what} name unknown node {target!r}"
                raise InvalidUpdateError(msg)
            if target not in routes:
                routes.append(target)
        return routes

    def _store(self) -> Workflows:
        if self.checkpointer is None:
            msg = "No checkpointer set: compile(checkpointer=...) to keep and read threads"
            raise NoCheckpointerError(msg)
        return self.checkpointer
