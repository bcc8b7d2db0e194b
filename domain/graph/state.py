"""StateGraph: LangGraph's graph builder, as pure data plus node callables."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Hashable, Sequence
from typing import Any

from domain.errors import GraphDefinitionError
from domain.graph.compiled import CompiledStateGraph
from domain.graph.constants import END, START
from domain.graph.definition import Branch, NodeSpec
from domain.graph.unsupported import refuse_unsupported
from domain.privacy.personal import Personal
from domain.record.schema import Channel, channels_of


def _parameters(action: Callable[..., Any]) -> list[inspect.Parameter]:
    try:
        return list(inspect.signature(action).parameters.values())
    except (TypeError, ValueError):
        return []


def _takes_runtime(action: Callable[..., Any]) -> bool:
    """A parameter named `runtime` gets the run's Runtime, as in LangGraph."""
    return any(p.name == "runtime" for p in _parameters(action))


def _takes_config(action: Callable[..., Any]) -> bool:
    """A parameter named `config`, or a second positional one but `runtime`."""
    parameters = [p for p in _parameters(action) if p.name != "runtime"]
    if any(p.name == "config" for p in parameters):
        return True
    positional = [
        p
        for p in parameters
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
    ]
    return len(positional) >= 2


def _is_async(action: Callable[..., Any]) -> bool:
    call = getattr(action, "__call__", None)  # noqa: B004 - callable objects too
    return inspect.iscoroutinefunction(action) or inspect.iscoroutinefunction(call)


class StateGraph:
    """Build a graph of nodes that read and update a shared state.

    `StateGraph(State)` where `State` is a TypedDict (or a dataclass or a
    pydantic model); keys annotated `Annotated[T, reducer]` combine updates
    with the reducer, other keys keep the last value written.
    """

    def __init__(
        self,
        state_schema: type,
        context_schema: type | None = None,
        *,
        input_schema: type | None = None,
        output_schema: type | None = None,
        **kwargs: Any,
    ) -> None:
        refuse_unsupported(
            "StateGraph()", {"input_schema": input_schema, "output_schema": output_schema}, kwargs
        )
        self.state_schema = state_schema
        self.context_schema = context_schema  # what `context=` is: a node's `runtime.context`
        self.channels: dict[str, Channel] = channels_of(state_schema)
        self.nodes: dict[str, NodeSpec] = {}
        self.edges: list[tuple[str, str]] = []
        self.waiting_edges: list[tuple[tuple[str, ...], str]] = []
        self.branches: dict[str, list[Branch]] = {}
        # Where a node that routes with Command(goto=...) may go: drawn only, as in LangGraph.
        self.destinations: dict[str, tuple[str, ...]] = {}

    def add_node(
        self,
        node: str | Callable[..., Any],
        action: Callable[..., Any] | None = None,
        *,
        metadata: dict[str, Any] | None = None,
        defer: bool = False,
        input_schema: type | None = None,
        retry_policy: Any = None,
        cache_policy: Any = None,
        destinations: Any = None,
        **kwargs: Any,
    ) -> StateGraph:
        """Add a node; `add_node(fn)` names it after the function. `destinations` (node
        names, or a dict of them to labels) only draws the edges of a node that routes
        with Command(goto=...), in LangGraph too (domain/graph/drawing.py)."""
        refuse_unsupported(
            "add_node()",
            {
                "defer": defer,
                "input_schema": input_schema,
                "retry_policy": retry_policy,
                "cache_policy": cache_policy,
            },
            kwargs,
        )
        if action is None:
            if isinstance(node, str):
                msg = f"Node {node!r} needs an action: add_node(name, function)"
                raise GraphDefinitionError(msg)
            action, node = node, getattr(node, "__name__", type(node).__name__)
        if not isinstance(node, str) or not node:
            msg = f"A node name must be a non-empty string, not {node!r}"
            raise GraphDefinitionError(msg)
        if node in (START, END):
            msg = f"Node name {node!r} is reserved"
            raise GraphDefinitionError(msg)
        if node in self.nodes:
            msg = f"Node {node!r} is already present"
            raise GraphDefinitionError(msg)
        if not callable(action):
            msg = f"The action of node {node!r} must be callable, not {action!r}"
            raise GraphDefinitionError(msg)
        self.nodes[node] = NodeSpec(
            node, action, _is_async(action), _takes_config(action), metadata, _takes_runtime(action)
        )
        if destinations is not None:
            self.destinations[node] = tuple(str(name) for name in destinations)
        return self

    def add_edge(self, start_key: str | Sequence[str], end_key: str) -> StateGraph:
        """Run `end_key` after `start_key`; after all of them, given a list."""
        if isinstance(start_key, str):
            if start_key == END:
                msg = "END cannot be the start of an edge"
                raise GraphDefinitionError(msg)
            self.edges.append((start_key, end_key))
        else:
            self.waiting_edges.append((tuple(start_key), end_key))
        if end_key == START:
            msg = "START cannot be the end of an edge"
            raise GraphDefinitionError(msg)
        return self

    def add_conditional_edges(
        self,
        source: str,
        path: Callable[..., Any],
        path_map: dict[Hashable, str] | list[str] | None = None,
    ) -> StateGraph:
        """After `source`, run the node(s) that `path(state)` names."""
        if isinstance(path_map, list):
            path_map = {name: name for name in path_map}
        self.branches.setdefault(source, []).append(Branch(path, path_map))
        return self

    def add_sequence(self, nodes: Sequence[str | Callable[..., Any]]) -> StateGraph:
        """Add nodes that run one after the other."""
        previous: str | None = None
        for item in nodes:
            self.add_node(item)
            name = item if isinstance(item, str) else list(self.nodes)[-1]
            if previous is not None:
                self.add_edge(previous, name)
            previous = name
        return self

    def set_entry_point(self, key: str) -> StateGraph:
        return self.add_edge(START, key)

    def set_conditional_entry_point(
        self, path: Callable[..., Any], path_map: dict[Hashable, str] | list[str] | None = None
    ) -> StateGraph:
        return self.add_conditional_edges(START, path, path_map)

    def set_finish_point(self, key: str) -> StateGraph:
        return self.add_edge(key, END)

    def validate(self) -> None:
        known = set(self.nodes) | {START}
        for start, end in self.edges:
            self._check_node(start, known, "starts")
            self._check_node(end, known | {END}, "ends")
        for starts, end in self.waiting_edges:
            for start in starts:
                self._check_node(start, known, "starts")
            self._check_node(end, known | {END}, "ends")
        for source, branches in self.branches.items():
            self._check_node(source, known, "starts")
            for branch in branches:
                for target in branch.targets() or ():
                    self._check_node(target, known | {END}, "ends")
        if not any(s == START for s, _ in self.edges) and START not in self.branches:
            msg = "Graph must have an entrypoint: add at least one edge from START to another node"
            raise GraphDefinitionError(msg)

    @staticmethod
    def _check_node(name: str, known: set[str], role: str) -> None:
        if name not in known:
            msg = f"An edge {role} at unknown node {name!r}"
            raise GraphDefinitionError(msg)

    def compile(
        self,
        checkpointer: Any = None,
        *,
        interrupt_before: Sequence[str] | None = None,
        interrupt_after: Sequence[str] | None = None,
        name: str | None = None,
        cache: Any = None,
        store: Any = None,
        debug: bool = False,
        personal: Personal | None = None,
    ) -> CompiledStateGraph:
        """Check the graph and bind it to a checkpointer (a store). `personal`: which of
        its values are personal data, recorded encrypted per subject (domain/privacy)."""
        refuse_unsupported("compile()", {"cache": cache, "store": store, "debug": debug})
        if interrupt_before or interrupt_after:
            msg = (
                "Static breakpoints (interrupt_before / interrupt_after) are not "
                "supported: call interrupt() in the node where a human must decide"
            )
            raise GraphDefinitionError(msg)
        self.validate()
        return CompiledStateGraph(self, checkpointer, name or "graph", personal)
