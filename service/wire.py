"""Holdpoint's objects in the shapes LangGraph's Agent Server sends.

See `anchors/langgraph_sdk_http.md`: a Thread, a ThreadState, a Run, an
Assistant, and interrupts as `{"value", "id"}` (plus `"response_schema": null`
inside run outputs, as the reference server sends them).
"""

from __future__ import annotations

import base64
import dataclasses
import functools
from collections import deque
from datetime import date, datetime, time
from enum import Enum
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from domain.assistants.assistant import AssistantVersion
from domain.record.langgraph_record import LANGGRAPH
from domain.record.thread import WorkflowThread
from domain.record.thread_state import CANCELLED, FAILED, IDLE, INTERRUPTED, RUNNING
from domain.types import Interrupt, StateSnapshot
from projections.timestamps import utc_text_or_none
from service.assistant_catalog import Found
from service.assistant_ids import assistant_id
from service.langgraph_app import LangGraphApp

if TYPE_CHECKING:
    from langgraph.types import Interrupt as LangGraphInterrupt

# LangGraph's server derives an assistant's id from its graph's name with this namespace.
# Thread statuses as LangGraph names them; a cancelled thread keeps Holdpoint's word.
THREAD_STATUS = {
    IDLE: "idle",
    RUNNING: "busy",
    INTERRUPTED: "interrupted",
    FAILED: "error",
    CANCELLED: "cancelled",
}
WIRE_TO_INDEX_STATUS = {"idle": "idle", "busy": "running", "interrupted": "interrupted",
                        "error": "failed", "cancelled": "cancelled"}  # fmt: skip


def iso(moment: datetime | str | None) -> str | None:
    if moment is None or isinstance(moment, str):
        return moment
    return moment.isoformat()


def assistant_json(found: Found) -> dict[str, Any]:
    """An assistant at a version, as LangGraph's server answers it: the version's fields,
    with the assistant's own times."""
    return {
        **assistant_version_json(found.version),
        "created_at": utc_text_or_none(found.created_at),
        "updated_at": utc_text_or_none(found.updated_at),
    }


def assistant_version_json(version: AssistantVersion) -> dict[str, Any]:
    """One of an assistant's versions, as LangGraph's server lists them."""
    return {
        "assistant_id": version.assistant_id,
        "version": version.version,
        "graph_id": version.graph_id,
        "config": version.config,
        "context": version.context,
        "metadata": version.metadata,
        "created_at": utc_text_or_none(version.created_at),
        "name": version.name,
        "description": version.description,
    }


def interrupt_json(
    interrupt: Interrupt | LangGraphInterrupt, *, in_output: bool = False
) -> dict[str, Any]:
    body: dict[str, Any] = {"value": langgraph_json(interrupt.value), "id": interrupt.id}
    if in_output:
        body["response_schema"] = None
    return body


def output_json(value: Any) -> Any:
    """A run's output or stream chunk as JSON: interrupts become dicts, tuples lists."""
    if isinstance(value, Interrupt):
        return interrupt_json(value, in_output=True)
    if isinstance(value, dict):
        return {key: output_json(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [output_json(item) for item in value]
    return value


def langgraph_json(value: Any) -> Any:
    """A real LangGraph graph's value as LangGraph's server sends it: a LangChain message as
    its fields (`type`, `content`, `tool_calls`, `id`, `name`...), a pydantic model or a
    dataclass as its fields, an interrupt as `{"value", "id"}`, a date as ISO text, a set
    or tuple as a list."""
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, dict):
        return {str(key): langgraph_json(item) for key, item in value.items()}
    if isinstance(value, list | tuple | set | frozenset | deque):
        return [langgraph_json(item) for item in value]
    langgraph_interrupt, send = _langgraph_types()
    if isinstance(value, langgraph_interrupt | Interrupt):
        return interrupt_json(value, in_output=True)
    if isinstance(value, send):
        return {"node": value.node, "arg": langgraph_json(value.arg)}
    if isinstance(value, BaseModel):
        return langgraph_json(value.model_dump(mode="python"))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
        return langgraph_json(fields)
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    if isinstance(value, Enum):
        return langgraph_json(value.value)
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    return str(value)


@functools.cache
def _langgraph_types() -> tuple[type[Any], type[Any]]:
    """LangGraph's Interrupt and Send, imported when a value that is not JSON is first
    shown (a native graph's values are JSON: a server of native graphs alone starts and
    runs without LangGraph, service/langgraph_app.py)."""
    from langgraph.types import Interrupt as LangGraphInterrupt  # noqa: PLC0415
    from langgraph.types import Send  # noqa: PLC0415

    return LangGraphInterrupt, Send


def from_record(data: Any) -> Any:
    """A real LangGraph thread's recorded value as its objects (`saver.values`, which
    brings LangChain, imported when one is first read)."""
    from saver.values import from_record as decoded  # noqa: PLC0415

    return decoded(data)


def shown_payload(graph: object, payload: Any) -> Any:
    """An interrupt's payload as a reviewer is shown it: a real LangGraph graph's (recorded
    in its JSON form, saver/values.py) in LangGraph's own terms, a native one as it is."""
    if isinstance(graph, LangGraphApp):
        return langgraph_json(from_record(payload))
    return payload


def thread_metadata(thread: WorkflowThread) -> dict[str, Any]:
    """The thread's metadata as LangGraph's server shows it: with its graph, and the
    assistant that last ran it (a served graph's own unless one with recorded
    configuration did: then its version too)."""
    metadata = {key: value for key, value in thread.metadata.items() if value is not None}
    return {**metadata, "graph_id": thread.graph_id, "assistant_id": thread_assistant_id(thread)}


def thread_assistant_id(thread: WorkflowThread) -> str:
    return str(thread.metadata.get("assistant_id") or assistant_id(thread.graph_id))


def thread_json(thread: WorkflowThread, *, busy: bool = False) -> dict[str, Any]:
    """A recorded thread as LangGraph's Thread."""
    interrupts: dict[str, list[dict[str, Any]]] = {}
    langgraph = thread.engine == LANGGRAPH
    for interrupt_id, record in thread.interrupts.items():
        task = record["task_id"] if langgraph else thread.task_id(record["node"])
        value = langgraph_json(from_record(record["value"])) if langgraph else record["value"]
        interrupts.setdefault(task, []).append({"id": interrupt_id, "value": value})
    values = None if thread.checkpoint is None else thread.current_values()
    if langgraph and values is not None:
        values = langgraph_json(from_record(values))
    error = thread.error
    status = "busy" if busy and thread.status != CANCELLED else THREAD_STATUS[thread.status]
    return {
        "thread_id": thread.thread_id,
        "created_at": iso(thread.created_on),
        "updated_at": iso(thread.modified_on),
        "state_updated_at": iso(thread.modified_on),
        "metadata": thread_metadata(thread),
        "status": status,
        "config": {"configurable": {}},
        "values": values,
        "error": None if error is None else {"error": error["type"], "message": error["message"]},
        "interrupts": interrupts,
    }


def reserved_thread_json(
    thread_id: str, created_at: datetime, metadata: dict[str, Any]
) -> dict[str, Any]:
    """A thread created over HTTP that has not run yet (nothing is recorded)."""
    return {
        "thread_id": thread_id,
        "created_at": iso(created_at),
        "updated_at": iso(created_at),
        "state_updated_at": iso(created_at),
        "metadata": metadata,
        "status": "idle",
        "config": {},
        "values": None,
        "error": None,
        "interrupts": {},
    }


def checkpoint_json(config: dict[str, Any] | None) -> dict[str, Any] | None:
    if config is None:
        return None
    configurable = config.get("configurable") or {}
    return {
        "thread_id": configurable.get("thread_id"),
        "checkpoint_ns": configurable.get("checkpoint_ns", ""),
        "checkpoint_id": configurable.get("checkpoint_id"),
    }


def server_keys(thread: WorkflowThread | None) -> dict[str, Any]:
    if thread is None:
        return {}
    return {
        "thread_id": thread.thread_id,
        "graph_id": thread.graph_id,
        "assistant_id": thread_assistant_id(thread),
    }


def state_json(snapshot: StateSnapshot, thread: WorkflowThread | None = None) -> dict[str, Any]:
    """A StateSnapshot as LangGraph's ThreadState; with its `thread`, the metadata has the
    keys LangGraph's server adds (thread, graph, assistant), under those recorded (a
    LangGraph run's checkpoints record its run and user too: service/langgraph_app.py)."""
    checkpoint = checkpoint_json(snapshot.config)
    parent = checkpoint_json(snapshot.parent_config)
    tasks = [
        {
            "id": task.id,
            "name": task.name,
            "path": list(task.path),
            "error": None if task.error is None else str(task.error),
            "interrupts": [interrupt_json(i) for i in task.interrupts],
            "checkpoint": None,
            "state": None,
            "result": langgraph_json(task.result),
        }
        for task in snapshot.tasks
    ]
    return {
        "values": langgraph_json(snapshot.values),
        "next": list(snapshot.next),
        "tasks": tasks,
        "metadata": {**server_keys(thread), **(snapshot.metadata or {})},
        "created_at": snapshot.created_at,
        "checkpoint": checkpoint,
        "parent_checkpoint": parent,
        "interrupts": [interrupt_json(i) for i in snapshot.interrupts],
        "checkpoint_id": None if checkpoint is None else checkpoint["checkpoint_id"],
        "parent_checkpoint_id": None if parent is None else parent["checkpoint_id"],
    }
