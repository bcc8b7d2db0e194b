"""Which graphs a server runs: from the command line, a config file, or the seeds.

A graph is named by `NAME=path/to/file.py:attr`, where `attr` is a graph, or a function
of no arguments returning one (a graph factory). A graph is either engine's:

- Holdpoint's native engine (`domain.graph`): a `StateGraph` builder or a compiled graph
  (its builder is compiled again, on the server's store);
- real LangGraph (`langgraph`): a `StateGraph` builder, a compiled graph (as
  `create_agent` and `create_react_agent` make them) or an `@entrypoint` function, served
  on HoldpointSaver over the server's store (service/langgraph_app.py).

The same `path:attr` strings come from a `holdpoint.toml` (`[graphs]` table) or from a
LangGraph `langgraph.json` (its `graphs` map); paths in a file are relative to that file.
With no graph named, the server runs the seed examples.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import re
import sys
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from types import ModuleType
from typing import Any

from domain.errors import HoldpointError, InvalidUpdateError
from domain.graph import CompiledStateGraph, StateGraph
from domain.oversight.hold_points import check_approvals
from domain.record.application import Workflows
from domain.types import expiry_rule
from service.langgraph_app import LangGraphApp
from service.refund_graph import build_graph
from service.runs import ServedGraph

GRAPH_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
# The seed examples: refund (seed b, the threshold refund, also `holdpoint demo`'s
# graph), refund_approval (seed a) and content_review (seed 000).
SEEDS = {
    "refund": "refund_threshold.py:builder",
    "refund_approval": "refund_approval.py:builder",
    "content_review": "content_review.py:builder",
}


class GraphLoadError(HoldpointError, ValueError):
    """A graph named to the server cannot be found or is not a Holdpoint graph."""


@dataclass(frozen=True)
class GraphSource:
    """Where one served graph comes from."""

    name: str
    path: Path
    attr: str
    quiet: bool = False  # the seed programs print their story when imported
    # A holdpoint.toml graph table's `interrupt_deadline` (seconds) and `on_expiry`: the
    # graph's default for interrupts that give no deadline (`set_interrupt_deadline`).
    interrupt_deadline: float | None = None
    on_expiry: str = "reject"
    # Its hold points' policy (`set_oversight`): `separation_of_duties = false` turns that
    # rule off for this graph; `approvals`, the approvals its interrupts need by default.
    separation_of_duties: bool | None = None
    approvals: int | None = None
    # `amount_field`: the payload field holding a decision's amount (keys' max_amount).
    amount_field: str | None = None

    def __str__(self) -> str:
        return f"{self.name}={self.path}:{self.attr}"


def parse_graph_spec(text: str, base: Path | None = None) -> GraphSource:
    """`NAME=path.py:attr` as a GraphSource; a relative path is read from `base`."""
    name, equals, location = text.partition("=")
    if not equals:
        msg = f"--graph {text!r} must be NAME=path/to/file.py:attr"
        raise GraphLoadError(msg)
    return graph_source(name.strip(), location.strip(), base or Path.cwd())


def graph_source(name: str, location: str, base: Path) -> GraphSource:
    if not GRAPH_NAME.fullmatch(name):
        msg = f"Graph name {name!r} must be letters, digits, '_', '-' or '.' (at most 64)"
        raise GraphLoadError(msg)
    path_text, colon, attr = location.rpartition(":")
    if not colon or not path_text or not attr.isidentifier():
        msg = f"Graph {name!r}: {location!r} must be path/to/file.py:attr"
        raise GraphLoadError(msg)
    path = Path(path_text)
    return GraphSource(name, path if path.is_absolute() else base / path, attr)


def read_config(path: Path) -> tuple[list[GraphSource], dict[str, Any]]:
    """The graphs and the `[server]` settings of a holdpoint.toml or a langgraph.json; a
    holdpoint.toml's custom roles (`[roles]`) come as the setting `roles`, its `[oidc]`
    provider as `oidc`, its `[retention] floor_days` as `retention_floor_days`."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        msg = f"Cannot read the config file {path}: {error.strerror}"
        raise GraphLoadError(msg) from None
    try:
        config = json.loads(text) if path.suffix == ".json" else tomllib.loads(text)
    except (ValueError, tomllib.TOMLDecodeError) as error:
        msg = f"The config file {path} is not valid {path.suffix.lstrip('.')}: {error}"
        raise GraphLoadError(msg) from None
    graphs = config.get("graphs") or {}
    server = config.get("server") or {}
    if not isinstance(graphs, dict) or not isinstance(server, dict):
        msg = f"In {path}, 'graphs' and 'server' must be tables (maps)"
        raise GraphLoadError(msg)
    if "roles" in config:
        server = {**server, "roles": config["roles"]}
    if "oidc" in config:
        server = {**server, "oidc": config["oidc"]}
    retention = config.get("retention") or {}
    if not isinstance(retention, dict):
        msg = f"In {path}, 'retention' must be a table (a map)"
        raise GraphLoadError(msg)
    if "floor_days" in retention:
        server = {**server, "retention_floor_days": retention["floor_days"]}
    sources = []
    for name, entry in graphs.items():
        table = entry if isinstance(entry, dict) else {"path": entry}
        location = table.get("path")
        if not isinstance(location, str):
            msg = f"In {path}, graph {name!r} must be 'path/to/file.py:attr'"
            raise GraphLoadError(msg)
        source = graph_source(str(name), location, path.parent)
        sources.append(_with_oversight(_with_deadline(source, table, path), table, path))
    return sources, server


def _with_oversight(source: GraphSource, table: dict[str, Any], path: Path) -> GraphSource:
    """`source` with its graph table's hold-point policy, checked now."""
    separation, approvals = table.get("separation_of_duties"), table.get("approvals")
    if separation is not None and not isinstance(separation, bool):
        msg = (
            f"In {path}, graph {source.name!r}: separation_of_duties must be true or false, "
            f"not {separation!r}"
        )
        raise GraphLoadError(msg)
    if approvals is not None:
        try:
            check_approvals(approvals)
        except InvalidUpdateError as error:
            msg = f"In {path}, graph {source.name!r}: {error}"
            raise GraphLoadError(msg) from None
    amount_field = table.get("amount_field")
    if amount_field is not None and (not isinstance(amount_field, str) or not amount_field):
        msg = (
            f"In {path}, graph {source.name!r}: amount_field must name a payload field, "
            f"not {amount_field!r}"
        )
        raise GraphLoadError(msg)
    return replace(
        source, separation_of_duties=separation, approvals=approvals, amount_field=amount_field
    )


def _with_deadline(source: GraphSource, table: dict[str, Any], path: Path) -> GraphSource:
    """`source` with its graph table's default interrupt deadline, checked now."""
    deadline, on_expiry = table.get("interrupt_deadline"), table.get("on_expiry", "reject")
    if deadline is None:
        if "on_expiry" in table:
            msg = f"In {path}, graph {source.name!r} has on_expiry but no interrupt_deadline"
            raise GraphLoadError(msg)
        return source
    if isinstance(deadline, bool) or not isinstance(deadline, int | float) or deadline <= 0:
        msg = (
            f"In {path}, graph {source.name!r}: interrupt_deadline must be a number of "
            f"seconds above 0, not {deadline!r}"
        )
        raise GraphLoadError(msg)
    try:
        expiry_rule(str(on_expiry))
    except InvalidUpdateError as error:
        msg = f"In {path}, graph {source.name!r}: {error}"
        raise GraphLoadError(msg) from None
    return replace(source, interrupt_deadline=float(deadline), on_expiry=str(on_expiry))


def seed_sources() -> list[GraphSource]:
    """The seed examples, where this checkout has them (not in the Docker image)."""
    for folder in (Path.cwd() / "examples", EXAMPLES):
        if all((folder / spec.partition(":")[0]).is_file() for spec in SEEDS.values()):
            return [
                GraphSource(name, folder / file, attr, quiet=True)
                for name, (file, _, attr) in ((n, s.partition(":")) for n, s in SEEDS.items())
            ]
    return []


def load_graphs(sources: list[GraphSource], store: Workflows) -> dict[str, ServedGraph]:
    """Each source's graph compiled on `store`, by name; the seeds when none is given."""
    if not sources:
        sources = seed_sources()
        if not sources:  # an installed package without the examples folder
            return {"refund": build_graph(store)}
    graphs: dict[str, ServedGraph] = {}
    for source in sources:
        if source.name in graphs:
            msg = f"Graph {source.name!r} is named twice"
            raise GraphLoadError(msg)
        graphs[source.name] = load_graph(source, store)
    return graphs


def load_graph(source: GraphSource, store: Workflows) -> ServedGraph:
    module = _import(source)
    try:
        target = getattr(module, source.attr)
    except AttributeError:
        msg = f"Graph {source.name!r}: {source.path} has no attribute {source.attr!r}"
        raise GraphLoadError(msg) from None
    found = _graph_of(target, source)
    if not isinstance(found, StateGraph | CompiledStateGraph):
        return _served_langgraph(found, source, store)
    personal = found.personal if isinstance(found, CompiledStateGraph) else None
    graph = _builder_of(found).compile(checkpointer=store, name=source.name, personal=personal)
    if isinstance(found, CompiledStateGraph):
        graph.adopt_settings(found)
    if source.interrupt_deadline is not None:
        graph.set_interrupt_deadline(source.interrupt_deadline, source.on_expiry)
    graph.set_oversight(
        separation_of_duties=False if source.separation_of_duties is False else None,
        approvals=source.approvals,
        amount_field=source.amount_field,
    )
    return graph


def _served_langgraph(found: Any, source: GraphSource, store: Workflows) -> LangGraphApp:
    """A real LangGraph graph, compiled (a builder) and served on HoldpointSaver."""
    from langgraph.graph import StateGraph as LangGraphStateGraph  # noqa: PLC0415

    compiled = found.compile() if isinstance(found, LangGraphStateGraph) else found
    app = LangGraphApp(compiled, source.name, store)
    if source.interrupt_deadline is not None:
        msg = (
            f"Graph {source.name!r} is a LangGraph graph: interrupt_deadline is not applied "
            "to its interrupts yet; leave it out of its graph table"
        )
        raise GraphLoadError(msg)
    app.set_oversight(
        separation_of_duties=False if source.separation_of_duties is False else None,
        approvals=source.approvals,
        amount_field=source.amount_field,
    )
    return app


def _builder_of(found: StateGraph | CompiledStateGraph) -> StateGraph:
    """The builder to compile again on the store (a compiled graph keeps its own)."""
    builder = found.builder if isinstance(found, CompiledStateGraph) else found
    if not isinstance(builder, StateGraph):
        msg = f"A compiled graph built by {type(builder).__qualname__}, not StateGraph"
        raise GraphLoadError(msg)
    return builder


def _import(source: GraphSource) -> ModuleType:
    if not source.path.is_file():
        msg = f"Graph {source.name!r}: no file {source.path}"
        raise GraphLoadError(msg)
    module_name = f"holdpoint_graph_{re.sub(r'[^A-Za-z0-9_]', '_', source.name)}"
    spec = importlib.util.spec_from_file_location(module_name, source.path)
    if spec is None or spec.loader is None:
        msg = f"Graph {source.name!r}: {source.path} cannot be imported as Python"
        raise GraphLoadError(msg)
    module = importlib.util.module_from_spec(spec)
    folder = str(source.path.parent)
    if folder not in sys.path:
        sys.path.append(folder)  # so that the graph's module can import its neighbours
    sys.modules[module_name] = module
    output = contextlib.redirect_stdout(io.StringIO()) if source.quiet else _stdout_to_stderr()
    try:
        with output:
            spec.loader.exec_module(module)
    except Exception as error:  # the user's module failed to import: say where and why
        sys.modules.pop(module_name, None)
        msg = f"Graph {source.name!r}: importing {source.path} failed: {error!r}"
        raise GraphLoadError(msg) from error
    return module


def _stdout_to_stderr() -> contextlib.AbstractContextManager[Any]:
    """A graph module's prints go to stderr, keeping stdout for the server's banner."""
    return contextlib.redirect_stdout(sys.stderr)


def _is_langgraph(target: Any) -> bool:
    """Whether `target` is a real LangGraph builder or compiled graph. LangGraph is
    imported here only if it already is: no object of its classes exists otherwise, and
    a server of native graphs alone starts without it (service/langgraph_app.py)."""
    if "langgraph.graph" not in sys.modules:
        return False
    from langgraph.graph import StateGraph as LangGraphStateGraph  # noqa: PLC0415
    from langgraph.pregel import Pregel  # noqa: PLC0415

    return isinstance(target, LangGraphStateGraph | Pregel)


def _graph_of(target: Any, source: GraphSource, depth: int = 0) -> Any:
    """The graph `target` is, or makes: a native graph or a LangGraph one."""
    if isinstance(target, StateGraph | CompiledStateGraph) or _is_langgraph(target):
        return target
    if callable(target) and not isinstance(target, type) and depth == 0:
        factory: Callable[[], Any] = target
        try:
            made = factory()
        except TypeError as error:
            msg = f"Graph {source.name!r}: {source.attr}() must take no arguments: {error}"
            raise GraphLoadError(msg) from None
        return _graph_of(made, source, depth + 1)
    kind = f"{type(target).__module__}.{type(target).__qualname__}"
    msg = (
        f"Graph {source.name!r}: {source.attr} is a {kind}, not a graph: give a StateGraph "
        "(native or LangGraph's), a compiled graph, an @entrypoint function, or a function "
        "of no arguments that returns one"
    )
    raise GraphLoadError(msg)
