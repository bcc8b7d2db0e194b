"""The answers of the oversight and audit endpoints, as the OpenAPI document shows them.

They document what the handlers return (`responses={200: {"model": ...}}`), so that a
client sees typed answers; they are not a second copy the answer goes through, which
would cost every request a validation (`tests/api/http/test_fuzz.py` checks each answer
against them instead).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from domain.access.keyring import RefusalInfo


class Answer(BaseModel):
    """A documented answer: open to keys added later, as clients should be."""

    model_config = {"extra": "allow"}


class Who(Answer):
    id: str | None
    role: str | None


class ApprovalLinks(Answer):
    decision: str
    assign: str
    thread: str
    audit: str


class Approval(Answer):
    """One open interrupt of the queue."""

    interrupt_id: str
    thread_id: str
    graph_id: str
    node: str
    payload: Any = Field(description="what the reviewer is shown")
    raised_at: str
    age_seconds: float
    required_role: str | None
    due_by: str | None
    assigned_to: str | None
    payload_digest: str | None = Field(description="send it with the decision")
    approvals_needed: int
    approvals_given: int
    namespace: str = Field(description="a real LangGraph graph's subgraph it was raised in")
    actions: list[dict[str, Any]] | None = Field(
        default=None,
        description="for a review of an agent's tool calls: each action's tool, arguments, "
        "description and allowed decisions",
    )
    legal_holds: list[str] = Field(description="the legal holds in place on its thread")
    links: ApprovalLinks


class ApprovalsPage(Answer):
    data: list[Approval]
    count: int = Field(description="all the matching open interrupts")
    next_cursor: str | None


class Approvals(Answer):
    given: int
    needed: int


class EventRef(Answer):
    version: int
    hash: str


class RunStatus(Answer):
    run_id: str
    status: str = Field(description="pending, running, success or error, as the store has it")
    attempt: int = Field(description="1, or more once runners took the run over after a crash")


class Decision(Answer):
    """An answer as recorded (InterruptResumed, or InterruptApproved short of the last)."""

    interrupt_id: str
    thread_id: str
    graph_id: str
    decision: str
    resume: Any
    reason: str | None
    payload_digest: str | None
    decided_by: Who
    decided_at: str | None
    idempotency_key: str | None
    run_id: str
    approvals: Approvals | None = Field(description="four eyes: approvals so far, and needed")
    resumed: bool = Field(description="false while more approvals are needed")
    run: RunStatus | None = Field(
        description="the run the answer began, as it stands now (a retry tells its outcome)"
    )
    event: EventRef


class Assignment(Answer):
    interrupt_id: str
    thread_id: str
    assigned_to: str | None
    assigned_by: Who


class Cancellation(Answer):
    thread_id: str
    status: str
    cancelled_by: Who
    cancelled_at: str | None
    reason: str | None


class RefusalsPage(Answer):
    data: list[RefusalInfo]
    next_after: int | None


class Verification(Answer):
    """The whole store's check (scope "store") or one thread's (scope "thread")."""

    ok: bool
    scope: str
    checked: int
    events_checked: int
    threads: list[dict[str, Any]] = Field(description="the threads found broken, or the one")
    problems: list[dict[str, Any]]
    next_cursor: str | None


class TimelineEntry(Answer):
    version: int
    at: str | None
    event: str
    actor: dict[str, Any] | None
    summary: str
    details: dict[str, Any]
    prev_hash: str
    event_hash: str


class Timeline(Answer):
    thread_id: str
    graph_id: str | None
    chain: dict[str, Any]
    entries: list[TimelineEntry]
    legal_holds: list[dict[str, Any]] = Field(
        description="the legal holds in place on the thread: no purge removes it meanwhile"
    )


class RecordedEvent(Answer):
    version: int
    type: str
    timestamp: str | None
    prev_hash: str | None
    event_hash: str | None
    data: dict[str, Any]


class RecordedEvents(Answer):
    thread_id: str
    events: list[RecordedEvent]
    next_after: int | None


def answers(model: type[BaseModel]) -> dict[int | str, dict[str, Any]]:
    """`responses=` for a 200 answered with `model`."""
    return {200: {"model": model}}


class StoreItem(Answer):
    """An item of the memory store, as LangGraph's store answers it."""

    namespace: list[str]
    key: str
    value: dict[str, Any]
    created_at: str
    updated_at: str


class StoreSearchItem(StoreItem):
    score: float | None = Field(description="null: no vector index ranks the items")


class StoreItems(Answer):
    items: list[StoreSearchItem]


class StoreNamespaceList(Answer):
    namespaces: list[list[str]]


class StoreChange(Answer):
    kind: str = Field(description="stored, changed or deleted")
    value: dict[str, Any] | None
    actor: dict[str, Any]
    at: str
    version: int


class StoreItemHistory(Answer):
    namespace: list[str]
    key: str
    changes: list[StoreChange]
