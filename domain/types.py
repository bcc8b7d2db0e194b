"""LangGraph's public value types, with the same names and shapes.

`from langgraph.types import interrupt, Command, Interrupt` becomes
`from domain.types import interrupt, Command, Interrupt`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, ClassVar, Generic, NamedTuple, TypeVar

from domain.engine.task_context import current_task
from domain.errors import InvalidUpdateError, NoCheckpointerError
from domain.oversight.hold_points import DEFAULT_DECISION_VALUES, check_approvals
from domain.record.hashing import to_json

N = TypeVar("N")


@dataclass(slots=True)
class Interrupt:
    """A pause waiting for a human: the payload shown and its stable id."""

    value: Any
    id: str
    response_schema: Any = None


@dataclass(frozen=True)
class Command(Generic[N]):
    """Resume a paused thread, update state, or route, as in LangGraph.

    As `invoke` input: `resume` answers pending interrupts (a value, or a map
    `{interrupt_id: value}`), `update` writes state, `goto` picks next nodes.
    Returned from a node: `update` is the node's update and `goto` its route.
    """

    graph: str | None = None
    update: Any = None
    resume: Any = None
    goto: str | Sequence[str] = ()

    PARENT: ClassVar[str] = "__parent__"

    def goto_nodes(self) -> list[str]:
        if isinstance(self.goto, str):
            return [self.goto]
        return list(self.goto)


class PregelTask(NamedTuple):
    """One scheduled node run in a checkpoint, as LangGraph shows it."""

    id: str
    name: str
    path: tuple[Any, ...] = ()
    error: Exception | None = None
    interrupts: tuple[Interrupt, ...] = ()
    state: Any = None
    result: Any = None


class StateSnapshot(NamedTuple):
    """A thread's state at one checkpoint; LangGraph's fields, in its order."""

    values: dict[str, Any]
    next: tuple[str, ...]
    config: dict[str, Any]
    metadata: dict[str, Any] | None
    created_at: str | None
    parent_config: dict[str, Any] | None
    tasks: tuple[PregelTask, ...]
    interrupts: tuple[Interrupt, ...] = ()


def interrupt(
    value: Any,
    *,
    required_role: str | None = None,
    deadline: float | timedelta | None = None,
    on_expiry: str = "reject",
    reason_required: bool = False,
    approvals: int | None = None,
    decision_values: dict[str, Any] | None = None,
    title: str | None = None,
    bulk: bool = False,
) -> Any:
    """Pause the running node for a human, or return the human's answer.

    The first time a node reaches its i-th `interrupt()` the thread pauses and
    `value` is shown to the reviewer. When the thread is resumed the node runs
    again from its start and its i-th `interrupt()` returns the i-th answer.
    Holdpoint's additions, recorded on InterruptRaised: `required_role`, the
    role a reviewer must hold to answer; `deadline` (seconds or a timedelta),
    after which the deadline worker records InterruptExpired and applies
    `on_expiry`: "reject" (the default: the node gets False), "approve"
    (True), "escalate:ROLE" (the interrupt stays open, now for ROLE, with
    a fresh deadline of the same length), or a chain ending in a terminal rule,
    "escalate:manager,then:reject" (see `expiry_rule`); `reason_required`, whether every
    answer must give a reason (the API answers 422 to one without);
    `approvals`, how many different principals must approve (2: four eyes;
    default: the graph's, see `CompiledStateGraph.set_oversight`), a rejection
    by any one ending the question; `decision_values`, what `approve` and
    `reject` resume with (default `True` and `False`), e.g. `{"approve":
    "approved", "reject": "changes_requested"}`.

    For the inbox (api/ui/inbox_query.py): `title`, the item's title, a template whose
    `{field}` placeholders (a dotted path for a nested one) take the payload's values,
    e.g. `"Publish? {content}"`, or `"{content}"` to show one field (default: the
    payload's `question`, or its fields as "key: value" text); `bulk`, whether a
    reviewer may approve or reject it together with other such items in one action
    (default False: one at a time, on its own page). A bulk action is a convenience of
    the inbox, never a shortcut: it records one decision per interrupt, each through
    the same rules as on its own (role, separation of duties, four eyes, a required
    reason) and bound to the digest of its own payload.

    An answer applies only to the question it answered: when the node runs again,
    an `interrupt()` whose value differs from the one answered does not receive
    the answer, it asks anew (domain/oversight/hold_points.py).
    """
    task = current_task()
    if not task.durable:
        msg = (
            "interrupt() needs a checkpointer: compile the graph with "
            "checkpointer=InMemorySaver() or a store from domain.record.store.open_store()"
        )
        raise NoCheckpointerError(msg)
    policy = interrupt_policy(
        required_role,
        deadline,
        on_expiry,
        reason_required=reason_required,
        approvals=approvals,
        decision_values=decision_values,
        title=title,
        bulk=bulk,
    )
    return task.next_resume_value(value, policy)


def interrupt_policy(
    required_role: str | None,
    deadline: float | timedelta | None,
    on_expiry: str,
    *,
    reason_required: bool = False,
    approvals: int | None = None,
    decision_values: dict[str, Any] | None = None,
    title: str | None = None,
    bulk: bool = False,
) -> dict[str, Any]:
    """Who may answer, how, by when, and what happens after: plain JSON for the event."""
    seconds = deadline.total_seconds() if isinstance(deadline, timedelta) else deadline
    if seconds is not None and seconds <= 0:
        msg = f"interrupt() deadline must be positive, not {deadline!r}"
        raise InvalidUpdateError(msg)
    policy: dict[str, Any] = {
        "required_role": required_role,
        "deadline_seconds": seconds,
        "on_expiry": None if seconds is None else expiry_rule(on_expiry),
        "reason_required": reason_required,
    }
    if approvals is not None:
        policy["approvals"] = check_approvals(approvals)
    if decision_values is not None:
        policy["decision_values"] = checked_decision_values(decision_values)
    if title is not None:
        policy["title"] = checked_title(title)
    if bulk:
        policy["bulk"] = True
    return policy


MAX_TITLE = 200


def checked_title(title: Any) -> str:
    if not isinstance(title, str) or not title.strip() or len(title) > MAX_TITLE:
        msg = f"interrupt() title must be text of 1 to {MAX_TITLE} characters, not {title!r}"
        raise InvalidUpdateError(msg)
    return title


def checked_decision_values(values: Any) -> dict[str, Any]:
    if not isinstance(values, dict) or not set(values) <= set(DEFAULT_DECISION_VALUES):
        msg = (
            "interrupt() decision_values must be a dict with keys among "
            f"{', '.join(DEFAULT_DECISION_VALUES)}, not {values!r}"
        )
        raise InvalidUpdateError(msg)
    return to_json(values, "interrupt() decision_values")  # type: ignore[no-any-return]


def expiry_rule(on_expiry: str) -> dict[str, Any]:
    """What a deadline's expiry does, as JSON: decide ("reject", "approve"), or escalate
    to a role ("escalate:ROLE"), or a chain of escalations that ends in a terminal rule
    ("escalate:manager,then:reject"; "escalate:reviewer,escalate:admin,then:approve"),
    each step with a fresh deadline of the same length. A chain without a terminal rule
    repeats its last escalation, at most MAX_ESCALATIONS times in all: the last leaves
    the question open for its role with no deadline."""
    steps = [step.strip() for step in on_expiry.split(",")]
    *escalations, last = steps
    rule = _last_rule(last, bool(escalations), on_expiry)
    for step in reversed(escalations):
        action, _, role = step.partition(":")
        if action != "escalate" or not role:
            raise InvalidUpdateError(_expiry_problem(on_expiry))
        rule = {"action": "escalate", "role": role, "then": rule}
    return rule


def _last_rule(step: str, chained: bool, on_expiry: str) -> dict[str, Any]:
    action, _, what = step.partition(":")
    decision = what if chained and action == "then" else step if not chained else ""
    if decision in ("reject", "approve"):
        return {"action": "decide", "decision": decision, "resume": decision == "approve"}
    if action == "escalate" and what:
        return {"action": "escalate", "role": what}
    raise InvalidUpdateError(_expiry_problem(on_expiry))


def _expiry_problem(on_expiry: str) -> str:
    return (
        'on_expiry must be "reject", "approve", "escalate:ROLE", or escalations ending in '
        f'a terminal rule ("escalate:manager,then:reject"), not {on_expiry!r}'
    )
