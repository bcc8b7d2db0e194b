"""How a superstep's node updates fold into a thread's values, and how a step closes.

The fold's one piece of logic, on plain data: the aggregate's events call it when a
step's last node has finished (and the run's graph calls `fold_update` to see a
node's update applied before routing on it).
"""

from __future__ import annotations

from typing import Any

from domain.record.schema import resolve_reducer

START = "__start__"  # the task that applies a run's input


def fold_update(
    values: dict[str, Any], update: dict[str, Any], channels: dict[str, str | None]
) -> None:
    """Apply one node's update to `values` in place, key by key."""
    for key, value in update.items():
        if key not in channels:
            continue
        name = channels[key]
        if name is None or key not in values:
            values[key] = value
        else:
            values[key] = resolve_reducer(name)(values[key], value)


def close_step(
    values: dict[str, Any],
    done: dict[str, dict[str, Any]],
    channels: dict[str, str | None],
    waiting_edges: dict[str, list[str]],
    barriers: dict[str, list[str]],
) -> list[str]:
    """The next step's nodes, once every node of the open step is `done`.

    Folds the updates into `values` in node-name order (as LangGraph applies them) and
    records arrivals at the join `barriers`, both in place; the routes and the barriers
    that are complete give the next step.
    """
    routes: list[str] = []
    for node in sorted(done):
        record = done[node]
        fold_update(values, record["update"], channels)
        routes.extend(record["routes"])
        for target, sources in waiting_edges.items():
            if node in sources:
                arrived = barriers.setdefault(target, [])
                if node not in arrived:
                    arrived.append(node)
    for target, arrived in list(barriers.items()):
        if set(arrived) >= set(waiting_edges[target]):
            routes.append(target)
            del barriers[target]
    return list(dict.fromkeys(routes))
