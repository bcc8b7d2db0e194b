"""Request bodies. LangGraph's keep unknown keys (the SDK sends many); ours forbid them."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, Strict

from api.http.input_limits import check_thread_id
from domain.record.thread_ids import THREAD_ID_MAX, THREAD_ID_PATTERN, THREAD_ID_RULE

# Checked by `check_thread_id`, whose message states the whole rule; the document shows
# the part of it that JSON Schema can say.
ThreadId = Annotated[
    str,
    Field(
        description=f"A thread id: {THREAD_ID_RULE}",
        json_schema_extra={
            "minLength": 1,
            "maxLength": THREAD_ID_MAX,
            "pattern": THREAD_ID_PATTERN,
        },
    ),
    AfterValidator(check_thread_id),
]


def _check_config(config: dict[str, Any] | None) -> dict[str, Any] | None:
    if config is not None and not isinstance(config.get("configurable") or {}, dict):
        raise ValueError("config.configurable must be an object")
    return config


# A run's, a cron's or an assistant's `config` (LangGraph's RunnableConfig): its
# `configurable` is merged under and over others', so it is an object.
RunConfig = Annotated[dict[str, Any] | None, AfterValidator(_check_config)]


class LangGraphBody(BaseModel):
    # Strict: a number is a number and a flag a flag, as the OpenAPI document says.
    model_config = ConfigDict(extra="allow", strict=True)


class ThreadCreate(LangGraphBody):
    thread_id: ThreadId | None = None
    metadata: dict[str, Any] | None = None
    if_exists: Literal["raise", "do_nothing"] | None = None
    supersteps: list[Any] | None = None


def _iso_text(value: Any) -> Any:
    """A string only: lax parsing would also take a number (as seconds since 1970)."""
    if not isinstance(value, str):
        msg = "Input should be an ISO 8601 date or time, as a string"
        raise ValueError(msg)  # (a TypeError would not be reported as invalid input)
    return value


def _as_utc(moment: datetime) -> datetime:
    try:
        return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).astimezone(UTC)
    except OverflowError:  # 0001-01-01T00:00+01:00
        msg = "the moment is out of range in UTC"
        raise ValueError(msg) from None


# An ISO 8601 date or time in JSON (a string, so not strict), in UTC (UTC when it has no offset).
Moment = Annotated[datetime, Strict(False), BeforeValidator(_iso_text), AfterValidator(_as_utc)]


THREAD_FIELDS = Literal[
    "thread_id",
    "created_at",
    "updated_at",
    "state_updated_at",
    "metadata",
    "config",
    "status",
    "values",
    "error",
    "interrupts",
]


class ThreadSearch(LangGraphBody):
    metadata: dict[str, Any] | None = None
    values: dict[str, Any] | None = None
    ids: list[str] | None = None
    status: Literal["idle", "busy", "interrupted", "error", "cancelled"] | None = None
    limit: int = Field(default=10, ge=1, le=1000)
    offset: int = Field(default=0, ge=0, le=100_000)
    sort_by: Literal["thread_id", "status", "created_at", "updated_at", "state_updated_at"] = Field(
        default="created_at", description="`state_updated_at` is `updated_at`"
    )
    sort_order: Literal["asc", "desc"] = "desc"
    select: list[THREAD_FIELDS] | None = Field(
        default=None, description="The fields of each thread to answer with (default: all)"
    )
    # Holdpoint's own: the langgraph-sdk's `threads.search` does not send them.
    created_after: Moment | None = Field(
        default=None,
        description="Holdpoint extension: only threads created at or after this moment "
        "(ISO 8601; UTC when it has no offset).",
        examples=["2025-03-01T00:00:00Z"],
    )
    created_before: Moment | None = Field(
        default=None,
        description="Holdpoint extension: only threads created before this moment "
        "(ISO 8601; UTC when it has no offset).",
        examples=["2025-04-01T00:00:00Z"],
    )


ASSISTANT_FIELDS = Literal[
    "assistant_id",
    "graph_id",
    "name",
    "description",
    "config",
    "context",
    "created_at",
    "updated_at",
    "metadata",
    "version",
]


class AssistantSearch(LangGraphBody):
    graph_id: str | None = None
    name: str | None = None
    metadata: dict[str, Any] | None = None
    limit: int = Field(default=10, ge=1, le=1000)
    offset: int = Field(default=0, ge=0)
    sort_by: Literal["assistant_id", "graph_id", "name", "created_at", "updated_at"] = "created_at"
    sort_order: Literal["asc", "desc"] = "desc"  # as LangGraph's server: the newest first
    select: list[ASSISTANT_FIELDS] | None = Field(
        default=None, description="The fields of each assistant to answer with (default: all)"
    )


class AssistantCreate(LangGraphBody):
    graph_id: str = Field(min_length=1, max_length=256)
    assistant_id: str | None = Field(default=None, description="A UUID (default: a new one)")
    config: RunConfig = None
    context: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None
    if_exists: Literal["raise", "do_nothing"] = "raise"
    name: str | None = Field(default=None, max_length=256)
    description: str | None = Field(default=None, max_length=4096)


class AssistantUpdate(LangGraphBody):
    graph_id: str | None = Field(default=None, min_length=1, max_length=256)
    config: RunConfig = None
    context: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None
    name: str | None = Field(default=None, max_length=256)
    description: str | None = Field(default=None, max_length=4096)


class AssistantVersions(LangGraphBody):
    metadata: dict[str, Any] | None = None
    limit: int = Field(default=10, ge=1, le=1000)
    offset: int = Field(default=0, ge=0)


class AssistantCount(LangGraphBody):
    graph_id: str | None = None
    name: str | None = None
    metadata: dict[str, Any] | None = None


class ThreadUpdate(LangGraphBody):
    metadata: dict[str, Any] = Field(description="Keys to set: merged into the metadata")
    ttl: Any = Field(default=None, description="Not supported: retention is policy-bound")


class ThreadCount(LangGraphBody):
    metadata: dict[str, Any] | None = None
    values: dict[str, Any] | None = None
    status: Literal["idle", "busy", "interrupted", "error", "cancelled"] | None = None


class CheckpointRef(LangGraphBody):
    checkpoint_id: str | None = None
    thread_id: str | None = None
    checkpoint_ns: str | None = None


class StateUpdate(LangGraphBody):
    values: dict[str, Any] | list[Any] | None = None
    as_node: str | None = None
    # Holdpoint's: an edit as_node decides the flow, and needs a reason.
    reason: str | None = Field(default=None, max_length=4000)
    checkpoint_id: str | None = None
    checkpoint: CheckpointRef | None = None


class StateAtCheckpoint(LangGraphBody):
    checkpoint: CheckpointRef
    subgraphs: bool = False


class HistoryQuery(LangGraphBody):
    limit: int = Field(default=10, ge=1, le=1000)
    before: str | dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None
    checkpoint: CheckpointRef | None = None


class CommandBody(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    resume: Any = None
    update: dict[str, Any] | None = None
    goto: str | list[str] | None = None


class RunCreate(LangGraphBody):
    assistant_id: str = Field(min_length=1, max_length=256)
    input: dict[str, Any] | None = None
    command: CommandBody | None = None
    config: RunConfig = None
    context: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None
    checkpoint_id: str | None = None
    checkpoint: CheckpointRef | None = None
    stream_mode: str | list[str] = "values"
    stream_subgraphs: bool = False
    interrupt_before: str | list[str] | None = None
    interrupt_after: str | list[str] | None = None
    if_not_exists: Literal["create", "reject"] | None = None
    multitask_strategy: Literal["reject", "interrupt", "rollback", "enqueue"] | None = None
    on_disconnect: Literal["cancel", "continue"] | None = Field(
        default=None,
        description="A streamed run's: cancel it when its stream is dropped (default: it goes on)",
    )


class BatchRun(RunCreate):
    """One run of a batch: on `thread_id`, or on a new thread (a stateless run)."""

    thread_id: ThreadId | None = None


class RunsCancel(LangGraphBody):
    thread_id: str | None = None
    run_ids: list[str] | None = Field(default=None, max_length=1000)
    status: Literal["pending", "running", "all"] | None = None


class DecisionBody(BaseModel):
    """A human's answer to an interrupt. Who answers comes from the API key."""

    model_config = ConfigDict(
        extra="forbid",
        strict=True,
        json_schema_extra={"examples": [{"decision": "approve", "reason": "Receipt checked."}]},
    )

    decision: Literal["approve", "reject", "edit", "respond", "escalate"]
    resume: Any = Field(
        default=None,
        description="The value the interrupted node receives. approve defaults to true, "
        "reject to false, escalate to null; edit and respond need one.",
    )
    reason: str | None = Field(default=None, max_length=4000)
    payload_digest: str | None = Field(
        default=None,
        pattern=r"^sha256:[0-9a-f]{64}$",
        description="The digest of the payload the decider was shown (the queue's "
        "`payload_digest`): a decision made on another payload is refused with 409",
    )


class AssignBody(BaseModel):
    """Who should decide an open interrupt: a principal that may decide, or null for no one."""

    model_config = ConfigDict(
        extra="forbid",
        strict=True,
        json_schema_extra={"examples": [{"reviewer_id": "rita"}, {"reviewer_id": None}]},
    )

    reviewer_id: str | None = Field(min_length=1, max_length=128)


class CancelBody(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    reason: str | None = Field(
        default=None, max_length=4000, description="Why it is stopped: required (422 without)"
    )


# -- the memory store (LangGraph's long-term memory) -------------------------------


class StorePut(LangGraphBody):
    namespace: list[str] = Field(description="The item's namespace: labels without '.'")
    key: str
    value: dict[str, Any] = Field(description="A JSON object")
    index: Any = Field(default=None, description="Not supported: no vector index is set up")
    ttl: Any = Field(default=None, description="Not supported: retention is policy-bound")


class StoreDelete(LangGraphBody):
    namespace: list[str]
    key: str


class StoreSearch(LangGraphBody):
    namespace_prefix: list[str] = Field(default_factory=list)
    filter: dict[str, Any] | None = Field(
        default=None, description="Field: value, or field: {$eq|$ne|$gt|$gte|$lt|$lte: value}"
    )
    limit: int = Field(default=10, ge=1, le=1000)
    offset: int = Field(default=0, ge=0)
    query: str | None = Field(default=None, description="Not supported: no vector index")
    refresh_ttl: bool | None = None


class StoreNamespaces(LangGraphBody):
    prefix: list[str] | None = None
    suffix: list[str] | None = None
    max_depth: int | None = Field(default=None, ge=1)
    limit: int = Field(default=100, ge=1, le=1000)
    offset: int = Field(default=0, ge=0)


# -- crons ----------------------------------------------------------------------


class CronCreate(LangGraphBody):
    assistant_id: str
    schedule: str = Field(description="Five-field cron: minute hour day-of-month month weekday")
    input: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None
    config: RunConfig = None
    context: dict[str, Any] | None = None
    webhook: str | None = None
    multitask_strategy: Literal["reject", "enqueue", "interrupt"] | None = None
    end_time: str | None = None
    enabled: bool = True
    timezone: str | None = Field(default=None, description="IANA time zone; default UTC")
    on_run_completed: Literal["keep"] | None = Field(
        default=None, description="`keep` only: a run's thread is kept, as the record is"
    )


class CronUpdate(LangGraphBody):
    schedule: str | None = None
    end_time: str | None = None
    enabled: bool | None = None
    timezone: str | None = None
    input: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None
    config: RunConfig = None
    context: dict[str, Any] | None = None
    webhook: str | None = None


class CronSearch(LangGraphBody):
    assistant_id: str | None = None
    thread_id: str | None = None
    enabled: bool | None = None
    limit: int = Field(default=10, ge=1, le=1000)
    offset: int = Field(default=0, ge=0)
    sort_by: Literal[
        "cron_id",
        "assistant_id",
        "thread_id",
        "next_run_date",
        "end_time",
        "created_at",
        "updated_at",
    ] = "created_at"
    sort_order: Literal["asc", "desc"] = "desc"
    select: list[str] | None = None


class CronCount(LangGraphBody):
    assistant_id: str | None = None
    thread_id: str | None = None
