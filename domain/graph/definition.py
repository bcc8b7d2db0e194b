"""What a built graph is, as the compiler and the digest read it.

`StateGraph` builds one; `CompiledStateGraph` and `graph_digest` read one
through `GraphDefinition`, so neither imports the builder (which imports the
compiler to compile).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from domain.record.schema import Channel


@dataclass(frozen=True, slots=True)
class NodeSpec:
    """A node: its callable, whether it is async, whether it takes `config` and `runtime`."""

    name: str
    action: Callable[..., Any]
    is_async: bool
    takes_config: bool
    metadata: dict[str, Any] | None
    takes_runtime: bool = False


@dataclass(frozen=True, slots=True)
class Branch:
    """A conditional edge: `path(state)` names the next node(s)."""

    path: Callable[..., Any]
    path_map: dict[Hashable, str] | None

    def targets(self) -> list[str] | None:
        return None if self.path_map is None else list(self.path_map.values())


class GraphDefinition(Protocol):
    """A graph as built: state and context schemas, channels, nodes, edges, branches, and
    where nodes that route with Command(goto=...) may go (drawn only)."""

    @property
    def state_schema(self) -> type: ...

    @property
    def context_schema(self) -> type | None: ...

    @property
    def channels(self) -> Mapping[str, Channel]: ...

    @property
    def nodes(self) -> Mapping[str, NodeSpec]: ...

    @property
    def edges(self) -> Sequence[tuple[str, str]]: ...

    @property
    def waiting_edges(self) -> Sequence[tuple[tuple[str, ...], str]]: ...

    @property
    def branches(self) -> Mapping[str, Sequence[Branch]]: ...

    @property
    def destinations(self) -> Mapping[str, tuple[str, ...]]: ...
