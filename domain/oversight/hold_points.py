"""The rules of a hold point: who may answer it, and who may change what it is about.

A hold point stands from the moment an interrupt is raised until the run its answer
begins has ended (the thread completed, was cancelled, or took new input). While it
stands:

- only a principal who may decide the interrupt answers it: a deciding role (the
  interrupt's `required_role`, or admin), and, with separation of duties, no one who
  shaped what is decided (started or forked the thread, or sent its input or edited its
  state since a decision last took effect: an answer whose question was asked anew does
  not count, so who edited the question may not answer the new one);
- an answer applies only to the question it answered: it carries the digest of the
  payload the decider was shown, and an `interrupt()` that asks something else raises
  a new interrupt instead of receiving it (`domain.engine.task_context`);
- the state changes, and the flow moves, only by a decision: an edit, an edit
  `as_node`, a `Command(update=..., goto=...)` or a fork of the thread by someone who
  may not decide the hold point is refused, and the refusal is recorded; and a run's
  `Command(goto=...)` may route a thread only where the graph itself starts it, at a
  hold point or not (anything else skips nodes, and their hold points).

An edit `as_node` stands in for a node having run, so it is itself a decision about
the flow: it needs a deciding role and a reason, and obeys separation of duties,
whether or not an interrupt stands.

The rules bind every actor with a role: the HTTP API's (from the API key) and a Python
caller's that names one in `config["configurable"]["actor"]`. A Python caller that
names no one acts as the local operating-system user, who holds the store itself and
could write its events directly: the rules do not bind it, and its events say
`"authenticated": false, "via": "local"`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any, Protocol

from domain.access.scope import check_scope
from domain.errors import (
    DecisionContradictionError,
    HoldPointBypassError,
    HoldpointError,
    InvalidUpdateError,
    QuestionChangedError,
    ReasonRequiredError,
    RepeatedApprovalError,
    ResumeRequiredError,
    SeparationOfDutiesError,
    WrongRoleError,
)
from domain.oversight.reviews import check_review_answer, review_answer, review_of
from domain.record.hashing import canonical_json, to_json
from domain.record.supersteps import START


class HoldPointThread(Protocol):
    """What these rules read of a thread (`domain.record.thread.WorkflowThread`), which
    itself asks them: a protocol, so that the rules need not import the aggregate."""

    thread_id: str
    graph_id: str
    next: list[str]
    interrupts: dict[str, dict[str, Any]]
    decided: dict[str, dict[str, Any]]

    def holds(self) -> dict[str, dict[str, Any]]: ...

    def shaped_by(self, principal_id: str) -> str | None: ...


DECIDING_ROLES = ("reviewer", "admin")
RUNNING_ROLES = ("agent", "admin")  # who feeds a thread that stands at no hold point
DECISIONS = ("approve", "reject", "edit", "respond", "escalate")
# What approve and reject resume with, unless the interrupt declares otherwise.
DEFAULT_DECISION_VALUES: dict[str, Any] = {"approve": True, "reject": False}
MAX_APPROVALS = 10
VALUE_NEEDED = ("edit", "respond")  # the kinds of decision that carry their own value
NO_VALUE: Any = object()  # an answer that gave no value to resume with


@dataclass(frozen=True)
class Oversight:
    """The oversight policy in force for a graph's threads.

    `separation_of_duties`: no one who shaped what is decided may decide it.
    `approvals`: how many distinct principals must approve each interrupt whose
    `interrupt()` call names no number (four eyes: 2).
    `amount_field`: the field of an interrupt's payload that holds the amount decided
    (a dotted path for a nested one), checked against a key's `max_amount`
    (domain/access/scope.py).
    `policy_version`: the version of the oversight policy on record that this is part
    of (domain/oversight/policy_records.py), named on each decision made under it;
    None when none was recorded for it (a Python caller's graph, or one changed since).
    """

    separation_of_duties: bool = True
    approvals: int = 1
    amount_field: str | None = None
    policy_version: int | None = None

    def __post_init__(self) -> None:
        check_approvals(self.approvals)


def check_approvals(approvals: object) -> int:
    if type(approvals) is not int or not 1 <= approvals <= MAX_APPROVALS:
        msg = f"approvals must be a whole number from 1 to {MAX_APPROVALS}, not {approvals!r}"
        raise InvalidUpdateError(msg)
    return approvals


def question_digest(payload: Any) -> str:
    """The digest of an interrupt's payload (plain JSON): what the decider was shown."""
    return "sha256:" + hashlib.sha256(canonical_json(payload).encode()).hexdigest()


def digest_of_asked(value: Any) -> str | None:
    """The digest of what an `interrupt()` call asks now; None if it is not JSON."""
    try:
        return question_digest(to_json(value, "The interrupt() value"))
    except HoldpointError:
        return None


def is_owner(actor: dict[str, Any]) -> bool:
    """The local operating-system user of a Python caller that named no actor."""
    return actor.get("via") == "local" and not actor.get("authenticated")


def _who(actor: dict[str, Any]) -> str:
    return f"principal {actor.get('id')!r} has role {actor.get('role')!r}"


def deciding_role(record: dict[str, Any]) -> str:
    """The role an interrupt (or a hold point standing for one) is decided by, besides admin."""
    return str(record.get("required_role") or "reviewer")


def holds_role_for(actor: dict[str, Any], record: dict[str, Any]) -> bool:
    return actor.get("role") in ("admin", deciding_role(record))


# -- answering ----------------------------------------------------------------


def check_may_decide(
    thread: HoldPointThread, interrupt_id: str, actor: dict[str, Any], policy: Oversight
) -> None:
    """WrongRoleError, SeparationOfDutiesError or RepeatedApprovalError unless `actor`
    may answer the pending interrupt."""
    if is_owner(actor):
        return
    record = thread.interrupts[interrupt_id]
    if not holds_role_for(actor, record):
        msg = (
            f"Interrupt {interrupt_id} may be answered by role {deciding_role(record)!r} "
            f"(or admin); {_who(actor)}"
        )
        raise WrongRoleError(msg)
    check_scope(actor, thread.graph_id, record.get("value"), policy.amount_field)
    shaped = thread.shaped_by(str(actor.get("id")))
    if policy.separation_of_duties and shaped:
        msg = (
            f"Principal {actor.get('id')!r} {shaped}, so may not answer its interrupts "
            "(separation of duties): another reviewer must"
        )
        raise SeparationOfDutiesError(msg)
    if any(approval["id"] == actor.get("id") for approval in record.get("approved_by", ())):
        needed = record.get("approvals", 1)
        msg = (
            f"Principal {actor.get('id')!r} has already approved interrupt {interrupt_id}, "
            f"which needs {needed} approvals by different principals: another must concur"
        )
        raise RepeatedApprovalError(msg)


def decision_value(decision: str, record: dict[str, Any]) -> Any:
    """What a decision resumes with when it gives no value (approve: true, reject: false,
    unless the interrupt declares its own); None for the kinds that need one."""
    declared = record.get("decision_values") or {}
    if decision in declared:
        return declared[decision]
    return DEFAULT_DECISION_VALUES.get(decision)


def answer_value(
    decision: str, record: dict[str, Any], resume: Any = NO_VALUE, reason: str | None = None
) -> Any:
    """What a decision resumes with: the value it gave, or its kind's (`decision_value`);
    ResumeRequiredError for a kind that needs a value and gave none (edit, respond). For
    a review of an agent's tool calls, the answer in the reviewing middleware's own shape
    (domain/oversight/reviews.py)."""
    review = review_in(record)
    if review is not None:
        return review_answer(review, decision, None if resume is NO_VALUE else resume, reason)
    if resume is not NO_VALUE:
        return resume
    if decision in VALUE_NEEDED:
        raise ResumeRequiredError(decision)
    return decision_value(decision, record)


def check_answer(
    interrupt_id: str,
    record: dict[str, Any],
    decision: str,
    resume: Any,
    reason: str | None,
    shown: str | None = None,
) -> None:
    """The answer's own rules: a known kind, a value that does not contradict it, a reason
    where the interrupt asks for one, the question the decider saw, and only approve or
    reject where several approvals are needed."""
    if decision not in DECISIONS:
        msg = f"Unknown decision {decision!r}: use one of {', '.join(DECISIONS)}"
        raise InvalidUpdateError(msg)
    review = review_in(record)
    if review is not None:
        check_review_answer(review, decision, resume)
    elif decision in DEFAULT_DECISION_VALUES:
        expected = decision_value(decision, record)
        if canonical_json(resume) != canonical_json(expected):
            raise DecisionContradictionError(decision, resume, expected)
    if record.get("reason_required") and not (isinstance(reason, str) and reason.strip()):
        msg = f"Interrupt {interrupt_id} asks for a reason with every answer; nothing was recorded"
        raise ReasonRequiredError(msg)
    if shown is not None and shown != record_digest(record):
        raise QuestionChangedError(interrupt_id, shown, record_digest(record))
    if record.get("approvals", 1) > 1 and decision not in DEFAULT_DECISION_VALUES:
        msg = (
            f"Interrupt {interrupt_id} needs {record['approvals']} approvals by different "
            f"principals: decide approve or reject, not {decision!r}"
        )
        raise InvalidUpdateError(msg)


def review_in(record: dict[str, Any]) -> dict[str, Any] | None:
    """The review of an agent's tool calls a pending interrupt asks for, if it is one."""
    return review_of(record.get("value"), record.get("response_schema"))


def record_digest(record: dict[str, Any]) -> str:
    """The digest of a pending interrupt's payload (computed for interrupts recorded
    before digests were)."""
    digest = record.get("digest")
    return str(digest) if digest else question_digest(record["value"])


# -- changing what a hold point is about --------------------------------------


def check_may_change(
    thread: HoldPointThread,
    actor: dict[str, Any],
    policy: Oversight,
    change: str,
    since: Collection[str] = (),
) -> None:
    """Unless `actor` may make `change` (an edit, a command) to the thread: at a standing
    hold point, who may decide every one standing (HoldPointBypassError,
    SeparationOfDutiesError); elsewhere, a role that runs threads (WrongRoleError). The
    hold points asked `since` the change was made are not yet standing (`check_holds`)."""
    if is_owner(actor):
        return
    holds = [key for key in thread.holds() if key not in since]
    if not holds and actor.get("role") not in RUNNING_ROLES:
        msg = (
            f"{change} feeds thread {thread.thread_id!r}, which needs role "
            f"{' or '.join(RUNNING_ROLES)}; {_who(actor)}"
        )
        raise WrongRoleError(msg)
    check_holds(thread, actor, policy, change, since)


def check_holds(
    thread: HoldPointThread,
    actor: dict[str, Any],
    policy: Oversight,
    change: str,
    since: Collection[str] = (),
) -> None:
    """HoldPointBypassError or SeparationOfDutiesError unless `actor` may decide every
    hold point standing on the thread, which `change` would alter; but for those whose
    interrupts are in `since`: asked after the change was made (by the run it began),
    which LangGraph may save before the change itself."""
    if is_owner(actor):
        return
    holds = {key: hold for key, hold in thread.holds().items() if key not in since}
    for interrupt_id, hold in holds.items():
        if not holds_role_for(actor, hold):
            msg = (
                f"Thread {thread.thread_id!r} stands at a hold point: interrupt "
                f"{interrupt_id} of node {hold['node']!r} ({hold['state']}). {change} "
                f"needs a principal who may decide it (role {deciding_role(hold)!r} or "
                f"admin); {_who(actor)}; only this refusal was recorded"
            )
            raise HoldPointBypassError(msg)
        if hold["state"] == "pending":  # a change at a hold point decides it: in scope only
            check_scope(actor, thread.graph_id, hold.get("value"), policy.amount_field)
    shaped = thread.shaped_by(str(actor.get("id")))
    if policy.separation_of_duties and shaped and holds:
        msg = (
            f"Principal {actor.get('id')!r} {shaped}, so may not decide its hold points "
            f"(separation of duties), nor make {change[0].lower()}{change[1:]} while one "
            "stands: another reviewer must"
        )
        raise SeparationOfDutiesError(msg)


def check_edit(
    thread: HoldPointThread,
    actor: dict[str, Any],
    policy: Oversight,
    as_node: str | None,
    reason: str | None,
) -> None:
    """An edit of the state: one as a node (but START's, which applies input) decides the
    flow (`check_edit_as_node`); any other changes what a standing hold point is about
    (`check_may_change`). The one rule for native graphs, served and Python LangGraph."""
    if as_node is not None and as_node != START:
        check_edit_as_node(thread, actor, policy, as_node, reason)
    else:
        check_may_change(thread, actor, policy, "An edit of the state")


def check_unsaved_run(
    thread: HoldPointThread, actor: dict[str, Any], passed: Collection[str]
) -> None:
    """HoldPointBypassError for a named actor's run with LangGraph's `durability="exit"`
    that began with no new input: that mode saves a run's last checkpoint and none of its
    writes, so what the run began with (a Command's resume, update or goto, or a step on
    from where the thread stood) is on record nowhere, and could not be held to the hold
    points' rules. The questions it went on from (`passed`) are named: no decision of them
    could be on record. The process's owner is exempt."""
    if is_owner(actor):
        return
    if passed:
        msg = (
            f"Thread {thread.thread_id!r}: this run went on from interrupt(s) "
            f'{", ".join(sorted(passed))} with durability="exit", which saves no answer, so '
            f"no decision of it could be on record; {_who(actor)}. Resume with durability "
            '"sync" or "async"; only this refusal was recorded'
        )
    else:
        msg = (
            f'Thread {thread.thread_id!r}: this run, with durability="exit", began with no '
            "new input (a Command, or a step on from where the thread stood), which that "
            "mode saves nowhere, so its goto or update could not be held to the hold "
            f'points\' rules; {_who(actor)}. Run it with durability "sync" or "async"; only '
            "this refusal was recorded"
        )
    raise HoldPointBypassError(msg)


def check_edit_as_node(
    thread: HoldPointThread,
    actor: dict[str, Any],
    policy: Oversight,
    as_node: str,
    reason: str | None,
) -> None:
    """An edit `as_node` decides the flow: a deciding role, a reason, separation of duties,
    and authority over every hold point standing."""
    if is_owner(actor):
        return
    if actor.get("role") not in DECIDING_ROLES:
        msg = (
            f"An edit as_node={as_node!r} stands in for node {as_node!r} having run, so it is "
            f"a decision about the flow: it needs role {' or '.join(DECIDING_ROLES)}; "
            f"{_who(actor)}; only this refusal was recorded"
        )
        raise HoldPointBypassError(msg)
    shaped = thread.shaped_by(str(actor.get("id")))
    if policy.separation_of_duties and shaped:
        msg = (
            f"Principal {actor.get('id')!r} {shaped}, so may not decide its flow with an "
            f"edit as_node={as_node!r} (separation of duties): another reviewer must"
        )
        raise SeparationOfDutiesError(msg)
    if not (isinstance(reason, str) and reason.strip()):
        msg = (
            f"An edit as_node={as_node!r} is a decision about the flow: give its reason "
            '(config["configurable"]["reason"]; over HTTP, "reason" in the body); nothing '
            "was recorded"
        )
        raise ReasonRequiredError(msg)
    check_holds(thread, actor, policy, f"An edit as_node={as_node!r}")


def check_goto(actor: dict[str, Any], goto: list[str], natural: list[str]) -> None:
    """HoldPointBypassError when a run's `Command(goto=...)` routes the thread to nodes
    the graph itself would not start it at (`natural`): that stands in for the nodes on
    the way having run, hold points included, which only an edit as_node does, as a
    recorded decision (`check_edit_as_node`)."""
    if is_owner(actor):
        return
    skipped = [node for node in goto if node not in natural]
    if skipped:
        starts = (
            f"it starts at {', '.join(map(repr, natural))} or nowhere"
            if natural
            else "it starts at no node a goto may name"
        )
        msg = (
            f"A Command(goto={goto!r}) routes the thread to {', '.join(map(repr, skipped))}, "
            f"where the graph does not start it ({starts}): that skips the nodes on the way, "
            "and their hold points. To decide the flow, a reviewer edits the state as_node, "
            "with a reason; "
            f"{_who(actor)}; only this refusal was recorded"
        )
        raise HoldPointBypassError(msg)


def check_may_fork(source: HoldPointThread, actor: dict[str, Any], version: int) -> None:
    """HoldPointBypassError unless `actor` may decide every decision whose run was still
    going at the checkpoint forked: the fork would run on under that decision. A fork of
    a thread paused at an interrupt asks it again (a new pending approval), so is free."""
    if is_owner(actor) or not source.next:
        return
    for interrupt_id, hold in source.decided.items():
        if not holds_role_for(actor, hold):
            msg = (
                f"Thread {source.thread_id!r} at version {version} runs on from the answer "
                f"to interrupt {interrupt_id} of node {hold['node']!r} ({hold['decision']} by "
                f"{hold['by']}): a fork there would run under that decision, so it needs a "
                f"principal who may decide it (role {deciding_role(hold)!r} or admin); "
                f"{_who(actor)}; fork from the checkpoint before the answer to have it "
                "asked again"
            )
            raise HoldPointBypassError(msg)
