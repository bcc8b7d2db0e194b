"""What a run uses of its compiled graph, as protocols.

`domain.graph.compiled.CompiledStateGraph` runs itself through `Run`, so the runtime
reads the graph through these protocols rather than import it back (no import cycle).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from domain.oversight.hold_points import Oversight
    from domain.record.application import Workflows
    from domain.record.thread import WorkflowThread


class RunNode(Protocol):
    """A node as a run calls it (`domain.graph.definition.NodeSpec`)."""

    @property
    def action(self) -> Callable[..., Any]: ...

    @property
    def is_async(self) -> bool: ...

    @property
    def takes_config(self) -> bool: ...

    @property
    def takes_runtime(self) -> bool: ...


class RunBuilder(Protocol):
    """The graph as built (`domain.graph.state.StateGraph`): its nodes by name."""

    @property
    def nodes(self) -> Mapping[str, RunNode]: ...


class RunGraph(Protocol):
    """The compiled graph a run runs (`domain.graph.compiled.CompiledStateGraph`)."""

    @property
    def checkpointer(self) -> Workflows | None: ...

    @property
    def builder(self) -> RunBuilder: ...

    @property
    def oversight(self) -> Oversight: ...

    @property
    def state_schema(self) -> type: ...

    @property
    def step_timeout(self) -> float | None: ...

    def start_thread(
        self, thread_id: str, config: dict[str, Any], actor: dict[str, Any]
    ) -> WorkflowThread: ...

    def filter_update(self, values: dict[str, Any], what: str) -> dict[str, Any]: ...

    def node_update(self, node: str, returned: Any) -> tuple[dict[str, Any], list[str]]: ...

    def routes(
        self,
        node: str,
        base: dict[str, Any],
        update: dict[str, Any],
        goto: list[str] | None = None,
    ) -> list[str]: ...

    def check_targets(self, targets: list[str], what: str) -> list[str]: ...

    def interrupt_policy(self, policy: dict[str, Any]) -> dict[str, Any]: ...
