"""A real LangGraph graph, served: compiled on HoldpointSaver over the server's store.

The server serves two kinds of graph with one API: native graphs (domain.graph) and real
LangGraph graphs (a `StateGraph` builder, a compiled graph, an `@entrypoint` function,
`create_agent` / `create_react_agent`). `LangGraphApp` gives a LangGraph graph what the
service asks of a native one (its id, its oversight policy, how a thread of it starts)
and runs it through `LangGraphRun` (service/langgraph_run.py). Its threads are recorded by
HoldpointSaver, so the queue, the reports, the hash chain and the UI serve them as they
serve native threads.

LangGraph itself is imported where a LangGraph graph is at hand, not with this module,
which the server and the CLI import for its class alone: a server of native graphs then
starts without LangGraph and LangChain (about 0.7 s of its start here;
tests/api/http/test_serve.py).
"""

from __future__ import annotations

import hashlib
import inspect
import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, cast

from domain.access.actor import resolve_actor
from domain.engine.runtime import REQUEST_KEY, engine_keys
from domain.errors import OversightError
from domain.history.forks import check_may_branch
from domain.oversight import hold_points
from domain.oversight.hold_points import Oversight
from domain.record.application import Workflows
from domain.record.langgraph_record import GRAPH_KEY
from domain.record.supersteps import START
from domain.record.thread import WorkflowThread
from service.assistant_ids import assistant_id
from service.errors import EngineConfigError

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig
    from langgraph.pregel import Pregel

    Graph = Pregel[Any, Any, Any, Any]  # any compiled LangGraph graph

# LangGraph's own strict resume: a resume map naming an interrupt that is not pending, or
# one value for several, is refused before any node runs (as LangGraph's server sets it).
STRICT_RESUME = "__pregel_strict_resume"
SUBGRAPHS_KEY = "holdpoint_stream_subgraphs"  # a run's config: stream subgraphs' chunks too


def check_engine_keys(configurable: dict[str, Any]) -> None:
    """Refuse a run's config that sets keys the graph engine keeps for itself
    (`domain.engine.runtime.engine_keys`)."""
    forged = engine_keys(configurable)
    if forged:
        msg = (
            f"config.configurable may not set {', '.join(map(repr, forged))}: the graph "
            "engine keeps these keys for itself"
        )
        raise EngineConfigError(msg)


class LangGraphApp:
    """A LangGraph graph compiled on `HoldpointSaver(store)`, served as `graph_id`."""

    def __init__(self, graph: Graph, graph_id: str, store: Workflows) -> None:
        from langgraph.checkpoint.holdpoint import HoldpointSaver  # noqa: PLC0415

        self.graph_id = graph_id
        self.name = graph_id
        self.saver = HoldpointSaver(store, graph_id=graph_id)
        self.graph: Graph = graph.copy(update={"checkpointer": self.saver, "name": graph_id})
        self.oversight = Oversight()
        self.step_timeout: float | None = None  # the server sets it; LangGraph has its own
        self.digest = graph_digest(graph)
        self.channels = channel_record(graph)

    def set_oversight(
        self,
        *,
        separation_of_duties: bool | None = None,
        approvals: int | None = None,
        amount_field: str | None = None,
        policy_version: int | None = None,
    ) -> None:
        """The hold points' policy for this graph's threads, as for a native graph."""
        current = self.oversight
        self.oversight = Oversight(
            separation_of_duties=current.separation_of_duties
            if separation_of_duties is None
            else bool(separation_of_duties),
            approvals=current.approvals if approvals is None else approvals,
            amount_field=current.amount_field if amount_field is None else amount_field,
            policy_version=policy_version,
        )
        self.saver.oversight = self.oversight

    def start_thread(
        self, thread_id: str, config: dict[str, Any], actor: dict[str, Any]
    ) -> WorkflowThread:
        """A new thread of this graph (ThreadStarted), to record."""
        from saver.values import to_record  # noqa: PLC0415

        return WorkflowThread.begin(
            thread_id=thread_id,
            graph_id=self.graph_id,
            graph_digest=self.digest,
            channels=self.channels,
            metadata=to_record(dict(config.get("metadata") or {})),
            actor=actor,
        )

    def run_config(self, config: dict[str, Any]) -> dict[str, Any]:
        """A run's config as LangGraph gets it: strict resume, and the graph's digest and
        channels for a thread the saver starts, and its start nodes for a goto's check."""
        given_configurable = config.get("configurable") or {}
        check_engine_keys(given_configurable)  # however the run came: request, cron, assistant
        configurable = {
            **given_configurable,
            STRICT_RESUME: True,
            GRAPH_KEY: {
                "digest": self.digest,
                "channels": self.channels,
                "starts": self.start_nodes(),
            },
        }
        given = {key: value for key, value in config.items() if key != SUBGRAPHS_KEY}
        metadata = config.get("metadata") or {}
        return {
            **given,
            "configurable": configurable,
            "metadata": {**metadata, **self._server_keys(given_configurable, metadata)},
        }

    def _server_keys(
        self, configurable: dict[str, Any], metadata: dict[str, Any]
    ) -> dict[str, Any]:
        """What LangGraph's server adds to a run's checkpoint metadata, recorded with each
        checkpoint (CheckpointSaved): the run, the thread, the graph, the assistant (one
        with recorded configuration names itself in the run's `metadata`, with its
        version), and the user (the key's principal)."""
        actor = configurable.get("actor") or {}
        keys = {
            "run_id": configurable.get("run_id"),
            "thread_id": configurable.get("thread_id"),
            "graph_id": self.graph_id,
            "assistant_id": metadata.get("assistant_id") or assistant_id(self.graph_id),
            "user_id": actor.get("id") if isinstance(actor, dict) else None,
        }
        return {key: value for key, value in keys.items() if value is not None}

    def state(self, thread_id: str, checkpoint_id: str | None = None) -> Any:
        """LangGraph's StateSnapshot of the thread, now or at a checkpoint (folded from
        the record: no node runs)."""
        configurable = {"thread_id": thread_id}
        if checkpoint_id:
            configurable["checkpoint_id"] = checkpoint_id
        return self.graph.get_state({"configurable": configurable})

    def history(
        self,
        thread_id: str,
        *,
        filter: dict[str, Any] | None = None,  # noqa: A002 - LangGraph's name
        before: str | None = None,
    ) -> Iterator[Any]:
        """The thread's StateSnapshots, newest first."""
        config: RunnableConfig = {"configurable": {"thread_id": thread_id}}
        before_config: RunnableConfig | None = (
            None if before is None else {"configurable": {"checkpoint_id": before}}
        )
        yield from self.graph.get_state_history(config, filter=filter, before=before_config)

    def update_state(
        self, config: dict[str, Any], values: Any, as_node: str | None
    ) -> dict[str, Any]:
        """A human's edit (recorded as StateEdited, by the actor in `configurable`), under
        the hold points' rules as for a native graph: while a hold point stands, only who
        may decide it edits; an edit `as_node` decides the flow, and needs a reason."""
        configurable = dict(config.get("configurable") or {})
        thread_id = str(configurable["thread_id"])
        actor = resolve_actor(configurable.get("actor"))
        try:
            self._check_edit(thread_id, configurable, actor, as_node)
        except OversightError as error:
            request = configurable.get(REQUEST_KEY)
            self.saver.store.record_refusal(error, actor, "update_state", thread_id, request)
            raise
        configurable["as_node"] = as_node
        edit = cast("RunnableConfig", self.run_config({**config, "configurable": configurable}))
        updated = self.graph.update_state(edit, values, as_node)
        return dict(updated)

    def _check_edit(
        self,
        thread_id: str,
        configurable: dict[str, Any],
        actor: dict[str, Any],
        as_node: str | None,
    ) -> None:
        thread = self.saver.store.thread(thread_id)
        if thread is None:
            return
        past = configurable.get("checkpoint_id")
        if past:  # a new branch from there: who may go on from it
            self.check_may_branch(thread_id, str(past), actor)
        reason = configurable.get("reason")
        hold_points.check_edit(thread, actor, self.oversight, as_node, reason)

    def start_nodes(self) -> list[str]:
        """The nodes the graph itself may start a thread at: its edges from START and the
        declared ends of its routes from START (a route with no path map could go
        anywhere: none of its targets counts, so `Command(goto=...)` there needs who may
        decide the flow, as `hold_points.check_goto` says)."""
        builder = getattr(self.graph, "builder", None)
        if builder is None:  # a functional-API graph: no nodes to route to
            return []
        nodes = [end for start, end in getattr(builder, "edges", ()) if start == START]
        for spec in getattr(builder, "branches", {}).get(START, {}).values():
            nodes += [str(end) for end in (spec.ends or {}).values()]
        return nodes

    def check_may_branch(self, thread_id: str, checkpoint_id: str, actor: dict[str, Any]) -> None:
        """HoldPointBypassError unless `actor` may go on from the thread's checkpoint
        `checkpoint_id` (`domain.history.forks.check_may_branch`)."""
        check_may_branch(self.saver.store, thread_id, "", checkpoint_id, actor)

    @property
    def needs_async(self) -> bool:
        """Whether a node can only be awaited (an `async def` with no sync form)."""
        return _has_async_only(self.graph)


def graph_digest(graph: Graph) -> str:
    """A digest of a LangGraph graph's structure (its nodes and edges) and its nodes' code,
    recorded when a thread starts, so that a thread says which graph it ran."""
    digest = hashlib.sha256()
    structure: Any
    try:
        structure = graph.get_graph().to_json()
    except Exception:  # a graph LangGraph cannot draw: its nodes are still named
        structure = {"nodes": sorted(graph.nodes)}
    digest.update(json.dumps(structure, sort_keys=True, default=str).encode())
    for name in sorted(graph.nodes):
        digest.update(name.encode())
        digest.update(_code_of(graph.nodes[name].bound).encode())
    return "sha256:" + digest.hexdigest()


def _code_of(runnable: Any) -> str:
    func = getattr(runnable, "func", None) or getattr(runnable, "afunc", None) or runnable
    try:
        return inspect.getsource(func)
    except (OSError, TypeError):
        return f"{getattr(func, '__module__', '?')}.{getattr(func, '__qualname__', type(func))}"


def channel_record(graph: Graph) -> dict[str, str | None]:
    """The graph's state keys, each with its reducer's name (None: the last value)."""
    builder = getattr(graph, "builder", None)
    channels = getattr(builder, "channels", None) or {}
    record: dict[str, str | None] = {}
    for key, channel in channels.items():
        if key.startswith("__"):
            continue
        operator = getattr(channel, "operator", None)
        record[key] = None if operator is None else getattr(operator, "__name__", str(operator))
    return record


def _has_async_only(graph: Graph) -> bool:
    from langgraph.pregel import Pregel  # noqa: PLC0415

    for node in graph.nodes.values():
        bound = node.bound
        if isinstance(bound, Pregel):
            if _has_async_only(bound):
                return True
        elif hasattr(bound, "afunc") and getattr(bound, "func", None) is None:
            return True
    return False
