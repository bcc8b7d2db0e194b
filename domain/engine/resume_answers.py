"""Answering a paused thread: `Command(resume=...)` matched to the pending interrupts,
each answer checked against its hold point's rules, then recorded.

Run (runtime.py) begins a resume here once it has the thread; everything is checked
before anything is recorded, so a refused answer records nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from domain.errors import (
    AmbiguousResumeError,
    InvalidUpdateError,
    NotInterruptedError,
    ThreadCancelledError,
    UnknownInterruptError,
)
from domain.oversight import hold_points
from domain.record.hashing import to_json
from domain.record.resume_maps import resume_map
from domain.record.schema import as_update
from domain.record.thread_state import CANCELLED, INTERRUPTED

if TYPE_CHECKING:
    from domain.engine.run_graph import RunGraph
    from domain.record.thread import WorkflowThread
    from domain.types import Command


def answer_interrupts(
    graph: RunGraph,
    thread: WorkflowThread,
    command: Command[Any],
    *,
    thread_id: str,
    config: dict[str, Any],
    actor: dict[str, Any],
    run_id: str,
) -> None:
    """Record `command`'s answers to `thread`'s pending interrupts (and its update), as
    `actor` in run `run_id`; the decision, reason, idempotency key and the digest of
    the payload shown come from `config["configurable"]`."""
    if thread.status == CANCELLED:
        raise ThreadCancelledError(thread_id)
    if thread.status != INTERRUPTED:
        raise NotInterruptedError(thread_id, thread.status)
    if command.goto_nodes():
        msg = (
            "Command(resume=...) cannot also goto: an answer resumes the interrupted "
            "node, which routes on; send goto in a Command of its own once the thread "
            "is no longer paused"
        )
        raise InvalidUpdateError(msg)
    answers = _match_answers(thread, command.resume, thread_id)
    configurable = config.get("configurable") or {}
    decision = str(configurable.get("decision") or "respond")
    reason = configurable.get("reason")
    reason = None if reason is None else to_json(str(reason), "The reason")
    key = configurable.get("idempotency_key")
    policy = graph.oversight
    update = None
    if command.update is not None:  # checked before anything is recorded
        given = as_update(command.update)
        if given is None:
            msg = "Command(update=...) must be a dict"
            raise InvalidUpdateError(msg)
        update = graph.filter_update(given, "The Command update")
    values = {}
    for interrupt_id, value in answers.items():
        values[interrupt_id] = to_json(value, "The resume value")
        hold_points.check_may_decide(thread, interrupt_id, actor, policy)
        hold_points.check_answer(
            interrupt_id,
            thread.interrupts[interrupt_id],
            decision,
            values[interrupt_id],
            reason,
            _shown(configurable.get("payload_digest"), interrupt_id),
        )
    if update is not None:  # it changes what every hold point is about
        hold_points.check_holds(thread, actor, policy, "A Command(update=...)")
    for interrupt_id, value in values.items():
        thread.answer(
            interrupt_id,
            resume=value,
            decision=decision,
            reason=reason,
            actor=actor,
            idempotency_key=None if key is None else str(key),
            run_id=run_id,
            separation_of_duties=policy.separation_of_duties,
            policy_version=policy.policy_version,
        )
    if update is not None:
        thread.edit(update, actor, reason)


def _match_answers(thread: WorkflowThread, resume: Any, thread_id: str) -> dict[str, Any]:
    pending = list(thread.interrupts)
    answers = resume_map(resume)
    if answers is not None:
        unknown = [key for key in answers if key not in thread.interrupts]
        if unknown:
            raise UnknownInterruptError(thread_id, unknown, pending)
        return answers
    if len(pending) > 1:
        raise AmbiguousResumeError(thread_id, pending)
    return {pending[0]: resume}


def _shown(payload_digest: Any, interrupt_id: str) -> str | None:
    """The digest of the payload the decider was shown, if the caller sent one: one for
    the single interrupt answered, or a map by interrupt id."""
    if isinstance(payload_digest, dict):
        payload_digest = payload_digest.get(interrupt_id)
    return None if payload_digest is None else str(payload_digest)
