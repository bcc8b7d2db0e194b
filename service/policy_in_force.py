"""The oversight policy a process serves under: made from its settings and its graphs,
recorded when it changed (domain/oversight/policy_records.py), and named by each
decision its graphs record (`policy_version`).

The policy is the whole set of settings that govern oversight: separation of duties,
the rubber-stamp floor, the retention floor, the custom roles, and for each served
graph its digest, separation of duties, approvals (four eyes), amount field and the
default deadline of its interrupts with its rule on expiry. It is read from the graphs
as they will run (a holdpoint.toml's graph tables applied, the server's
`separation_of_duties = false` too), so that it records what is in force, whichever
way it was configured.

A graph's deadline is recorded here, beside the graph's digest, rather than folded into
the digest (domain/graph/digest.py). The digest says which code a thread ran and is
recorded when the thread starts; a deadline in holdpoint.toml is configuration that
changes without the code changing, and folding it in would make threads started
before a change look as if they ran other code. Each interrupt records the deadline it
was given (`InterruptRaised`); this record says which default stood for the graph, with
which code, from when, and each decision names the version it was made under.
"""

from __future__ import annotations

from typing import Any

import structlog

from domain.access.actor import local_actor
from domain.graph import CompiledStateGraph
from domain.oversight.policy_records import PolicyVersion, record_policy
from domain.record.application import UNDECODABLE, Workflows
from service.runs import ServedGraph
from service.settings import ServerSettings

log = structlog.get_logger()


def oversight_policy(settings: ServerSettings, graphs: dict[str, ServedGraph]) -> dict[str, Any]:
    """The oversight settings of a process serving `graphs` with `settings`, as JSON."""
    return {
        "separation_of_duties": settings.separation_of_duties,
        "rubber_stamp_seconds": settings.rubber_stamp_seconds,
        "retention_floor_days": settings.retention_floor_days,
        "roles": settings.roles.as_record(),
        "graphs": {name: graph_policy(graphs[name]) for name in sorted(graphs)},
    }


def graph_policy(graph: ServedGraph) -> dict[str, Any]:
    """One graph's oversight settings, beside the digest of its code."""
    oversight = graph.oversight
    deadline = None
    if isinstance(graph, CompiledStateGraph):  # a LangGraph graph takes no default deadline
        default = graph.interrupt_policy({})
        if default.get("deadline_seconds") is not None:
            deadline = {"seconds": default["deadline_seconds"], "on_expiry": default["on_expiry"]}
    return {
        "digest": graph.digest,
        "separation_of_duties": oversight.separation_of_duties,
        "approvals": oversight.approvals,
        "amount_field": oversight.amount_field,
        "interrupt_deadline": deadline,
    }


def put_in_force(
    settings: ServerSettings, store: Workflows, graphs: dict[str, ServedGraph]
) -> PolicyVersion | None:
    """Apply the server's oversight settings to `graphs`, record the policy unless it is
    the one on record, and give each graph its version, which its decisions name (None:
    the record cannot be read)."""
    if not settings.separation_of_duties:  # off for the server: off for every graph
        for graph in graphs.values():
            graph.set_oversight(separation_of_duties=False)
    try:
        in_force = record_policy(store, oversight_policy(settings, graphs), local_actor())
    except UNDECODABLE:  # a damaged record: serve, and say so (`holdpoint verify` names it)
        log.error(
            "the oversight policy on record cannot be read: not recorded, and decisions "
            "name no policy version until it is repaired"
        )
        return None
    for graph in graphs.values():
        graph.set_oversight(policy_version=in_force.version)
    log.info(
        "oversight policy recorded" if in_force.recorded else "oversight policy unchanged",
        policy_version=in_force.version,
        policy_digest=in_force.digest,
    )
    return in_force
