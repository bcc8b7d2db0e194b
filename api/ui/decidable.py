"""Whether the viewer may decide an open interrupt, and if not, why.

Asked before a page offers a decision, with the very rules a decision is checked by
(`domain.oversight.hold_points.check_may_decide`: the interrupt's role, the key's
scope, separation of duties, four eyes) plus the role's permission and a suspended
graph, so that no one is shown a form the decision would then refuse. The decision
itself is checked again, as it is recorded: this is advice, never the guard.
"""

from __future__ import annotations

from dataclasses import dataclass

from api.http.auth import Permission
from api.ui.access import Viewer
from domain.errors import GraphSuspendedError, OversightError
from domain.oversight.hold_points import HoldPointThread, check_may_decide
from service.services import Services


@dataclass(frozen=True)
class Refusal:
    """Why the viewer may not decide: the refusal's code on record and its sentence."""

    code: str
    message: str


def refusal(
    services: Services, viewer: Viewer, thread: HoldPointThread, interrupt_id: str
) -> Refusal | None:
    """None if the viewer may decide the open interrupt `interrupt_id` of `thread` now."""
    if not viewer.may(Permission.DECIDE):
        message = f"Role {viewer.principal.role!r} may not decide interrupts on this server"
        return Refusal("wrong_role", message)
    graph = services.graphs.get(thread.graph_id)
    if graph is None:
        message = f"This server does not serve graph {thread.graph_id!r}, so cannot run it on"
        return Refusal("not_served", message)
    try:
        services.runs.admit(thread.graph_id)
        check_may_decide(thread, interrupt_id, viewer.principal.as_actor(), graph.oversight)
    except GraphSuspendedError as error:
        return Refusal("suspended", str(error))
    except OversightError as error:
        return Refusal(error.reason, str(error))
    return None
