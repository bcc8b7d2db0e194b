"""What LangGraph's server tells of an assistant's graph: its drawing, its schemas, its
subgraphs, for a native graph and for a real LangGraph one alike.

A real LangGraph graph is drawn by LangGraph (`get_graph`, `get_subgraphs`), and its
schemas are its builder's input, output, state and context schemas. A native graph is
drawn by `domain.graph.drawing`; its schemas are its state schema's (input, output and
state alike, as a native graph has no separate input or output schema) and its context
schema's; it has no subgraphs. Schemas are JSON Schema, made by pydantic; one that
cannot be put so (a field of an arbitrary class) is null.
"""

from __future__ import annotations

import typing
from typing import Any, is_typeddict

from pydantic import TypeAdapter, create_model
from pydantic.errors import PydanticSchemaGenerationError, PydanticUserError

from domain.graph import CompiledStateGraph
from domain.graph.drawing import graph_json
from service.langgraph_app import LangGraphApp

ServedGraph = CompiledStateGraph | LangGraphApp


def drawing(graph: ServedGraph, xray: bool | int) -> dict[str, Any]:
    """{"nodes": [...], "edges": [...]}; `xray` draws a LangGraph graph's subgraphs."""
    if isinstance(graph, LangGraphApp):
        drawn: dict[str, Any] = graph.graph.get_graph(xray=xray).to_json()
        for node in drawn["nodes"]:  # as LangGraph's server answers: a node's name only
            if isinstance(node.get("data"), dict):
                node["data"].pop("id", None)
        return drawn
    return graph_json(graph.builder)


def schemas(graph: ServedGraph) -> dict[str, Any]:
    """LangGraph's GraphSchema: the graph id and its input, output, state, config and
    context schemas."""
    if isinstance(graph, LangGraphApp):
        return _langgraph_schemas(graph.graph, graph.graph_id)
    state = _json_schema(graph.builder.state_schema)
    context = graph.builder.context_schema
    return {
        "graph_id": graph.graph_id,
        "input_schema": state,
        "output_schema": state,
        "state_schema": state,
        "config_schema": None,
        "context_schema": None if context is None else _json_schema(context),
    }


def subgraphs(graph: ServedGraph, namespace: str | None, recurse: bool) -> dict[str, Any]:
    """The schemas of the graph's subgraphs by namespace (a native graph has none)."""
    if not isinstance(graph, LangGraphApp):
        return {}
    found = graph.graph.get_subgraphs(namespace=namespace, recurse=recurse)
    return {name: _langgraph_schemas(subgraph, graph.graph_id) for name, subgraph in found}


def _langgraph_schemas(compiled: Any, graph_id: str) -> dict[str, Any]:
    """From the builder's schemas (LangGraph's own `get_input_jsonschema` refuses a
    `typing.TypedDict` before Python 3.12)."""
    builder = compiled.builder
    context = getattr(builder, "context_schema", None)
    return {
        "graph_id": graph_id,
        "input_schema": _json_schema(builder.input_schema),
        "output_schema": _json_schema(builder.output_schema),
        "state_schema": _json_schema(builder.state_schema),
        "config_schema": None,
        "context_schema": None if context is None else _json_schema(context),
    }


def _json_schema(schema: Any) -> dict[str, Any] | None:
    """`schema` (a TypedDict, a dataclass, a pydantic model) as JSON Schema, or None. A
    TypedDict is made a pydantic model first, as LangGraph does (pydantic takes only
    typing_extensions' TypedDict before Python 3.12); its keys are required when it is
    total."""
    try:
        if is_typeddict(schema):
            hints = typing.get_type_hints(schema, include_extras=True)
            required = schema.__required_keys__
            fields: dict[str, Any] = {
                key: (hint, ... if key in required else None) for key, hint in hints.items()
            }
            model = create_model(schema.__name__, **fields)
            made: dict[str, Any] = model.model_json_schema()
            return made
        found: dict[str, Any] = TypeAdapter(schema).json_schema()
    except (PydanticSchemaGenerationError, PydanticUserError, TypeError, NameError):
        return None
    return found
