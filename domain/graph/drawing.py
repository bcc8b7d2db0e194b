"""A native graph's drawing, as LangGraph's server answers `get_graph` for its graphs.

Nodes are `__start__` and each node (type `runnable`, data: its name), then `__end__`;
edges are the graph's edges and, marked `conditional`, where its branches may go: the
targets of their path map, or, without one, every node and `__end__` (as LangGraph
draws a branch it cannot read). A node's `destinations` are drawn as conditional edges.
A native graph has no subgraphs, so `xray` changes nothing.
"""

from __future__ import annotations

from typing import Any

from domain.graph.constants import END, START
from domain.graph.definition import GraphDefinition


def graph_json(builder: GraphDefinition) -> dict[str, Any]:
    """The drawing of the graph `builder` builds: {"nodes": [...], "edges": [...]}."""
    nodes: list[dict[str, Any]] = [
        {"id": node, "type": "runnable", "data": {"name": node}} for node in (START, *builder.nodes)
    ]
    nodes.append({"id": END})
    edges: list[dict[str, Any]] = [
        {"source": source, "target": target} for source, target in builder.edges
    ]
    edges += [
        {"source": source, "target": target}
        for sources, target in builder.waiting_edges
        for source in sources
    ]
    anywhere = [*builder.nodes, END]
    for source, branches in builder.branches.items():
        for branch in branches:
            for target in dict.fromkeys(branch.targets() or anywhere):
                edges.append({"source": source, "target": target, "conditional": True})
    for source, targets in builder.destinations.items():
        for target in targets:
            edges.append({"source": source, "target": target, "conditional": True})
    return {"nodes": nodes, "edges": edges}
