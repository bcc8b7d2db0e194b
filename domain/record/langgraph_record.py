"""What a real LangGraph graph's checkpoints and writes are, as the record keeps them.

`HoldpointSaver` (saver/) is LangGraph's checkpointer on Holdpoint's store. It hands the
thread aggregate plain JSON (`SavedCheckpoint`, `SavedWrites`: values already in their
JSON form, saver/values.py), and the aggregate records the catalogue's events from them
(domain/record/langgraph_commands.py). This module holds what both sides share: LangGraph's
reserved channel and task names, and the pure rules read off a checkpoint: which
channels are the graph's state, which nodes run next, how one checkpoint differs from
its parent, and where a pending write sorts.

The channel names mirror `langgraph.constants` and `langgraph.checkpoint.serde.types`;
tests/domain/test_langgraph_record.py checks them against LangGraph's own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any
from uuid import uuid4

LANGGRAPH = "langgraph"  # a thread recorded by HoldpointSaver (ThreadStarted.engine)
NATIVE = "native"  # a thread recorded by the native engine (domain.graph)

START = "__start__"
INTERRUPT = "__interrupt__"
RESUME = "__resume__"
ERROR = "__error__"
SCHEDULED = "__scheduled__"
TASKS = "__pregel_tasks"
NULL_TASK_ID = "00000000-0000-0000-0000-000000000000"
PULL = "~__pregel_pull"
PUSH = "~__pregel_push"
UPDATE_TASK = "~__interrupt__"  # the path of update_state's own task (as_node's writes)
BRANCH = "branch:to:"
JOIN = "join:"
# LangGraph's index of a write that replaces, rather than adds to, a task's writes.
SPECIAL_WRITE_INDEX = {ERROR: -1, SCHEDULED: -2, INTERRUPT: -3, RESUME: -4}
# configurable: what a server says of a graph it serves (digest, channels, start nodes)
GRAPH_KEY = "holdpoint_graph"
TAG = "$type"  # the key of a tagged value in the JSON form (saver/values.py)


@dataclass(frozen=True)
class SavedCheckpoint:
    """One `put`: a checkpoint LangGraph saved, its values in their JSON form.

    `values` holds the channels given a new version (and, when the checkpoint does not
    follow the thread's latest one, every channel with a value); `grown` the channels
    whose list only grew since the parent, as the items added; `emptied` the channels
    given a new version and no value. `answers_unsaved`: the run that saved it saves no
    writes but those of its last checkpoint (LangGraph's `durability="exit"`), so an
    answer to a question on its parent is never saved.
    """

    namespace: str
    checkpoint_id: str
    parent_id: str | None
    source: str
    step: int
    ts: str
    values: dict[str, Any]
    grown: dict[str, list[Any]]
    emptied: list[str]
    versions: dict[str, Any]
    seen: dict[str, dict[str, Any]]
    metadata: dict[str, Any]
    form: dict[str, Any] = field(default_factory=dict)  # "v", "updated_channels", others
    answers_unsaved: bool = False


@dataclass(frozen=True)
class SavedWrites:
    """One `put_writes`: a task's writes on a checkpoint, values in their JSON form."""

    namespace: str
    checkpoint_id: str
    task_id: str
    task_path: str
    writes: list[tuple[str, Any]]


@dataclass(frozen=True)
class Caller:
    """Who and what a checkpoint or write comes from: the actor, the run, and for a
    resume or an edit the decision, reason and idempotency key (configurable)."""

    actor: dict[str, Any]
    configured_run_id: str | None = None
    decision: str | None = None
    reason: str | None = None
    idempotency_key: str | None = None
    as_node: str | None = None
    payload_digest: Any = None

    @cached_property
    def run_id(self) -> str:
        """The run's id as configured, or one made when an event first needs it (most
        saves record none: no random bytes for them)."""
        return self.configured_run_id or uuid4().hex


def is_state_channel(channel: str) -> bool:
    """Whether a channel is a key of the graph's state, not one of LangGraph's own
    (`__start__`, `__pregel_tasks`, `branch:to:node`, `join:a+b:c`...)."""
    return not channel.startswith(("__", BRANCH, JOIN))


def routes_of(writes: list[tuple[str, Any]]) -> list[str]:
    """Where writes send the thread: `branch:to:node` channels, and `Send`s."""
    routes = [channel[len(BRANCH) :] for channel, _ in writes if channel.startswith(BRANCH)]
    routes += [
        str(value["node"])
        for channel, value in writes
        if channel == TASKS and isinstance(value, dict) and value.get(TAG) == "send"
    ]
    return list(dict.fromkeys(routes))


def write_index(channel: str, position: int) -> int:
    """The index a write keeps among its task's writes (LangGraph's WRITES_IDX_MAP)."""
    return SPECIAL_WRITE_INDEX.get(channel, position)


def _newer(version: Any, seen: Any) -> bool:
    if seen is None:
        return True
    try:
        return bool(version > seen)
    except TypeError:  # versions of two kinds: a change all the same
        return bool(version != seen)


def next_nodes(
    versions: dict[str, Any], seen: dict[str, dict[str, Any]], values: dict[str, Any]
) -> list[str]:
    """The nodes a checkpoint has yet to run, read off the checkpoint alone: those whose
    trigger channel (`branch:to:node`, `join:...:node`, `__start__`) holds a value at a
    version they have not seen (LangGraph empties a trigger once it is consumed), and the
    targets of pending `Send`s. The node that consumes the input is named `__start__`,
    as a StateGraph names it (the functional API names it after its entrypoint)."""
    found: list[str] = []
    for channel, version in versions.items():
        if channel not in values:
            continue
        if channel.startswith(BRANCH):
            node = channel[len(BRANCH) :]
        elif channel.startswith(JOIN):
            node = channel.rpartition(":")[2]
        elif channel == START:
            node = START
        else:
            continue
        if _newer(version, seen.get(node, {}).get(channel)):
            found.append(node)
    for send in values.get(TASKS) or ():
        if isinstance(send, dict) and send.get(TAG) == "send":
            found.append(str(send["node"]))
    return list(dict.fromkeys(found))


def node_of(task_path: str, values: dict[str, Any]) -> str:
    """The node a task path names: `~__pregel_pull, name` is `name`; a pushed task is its
    `Send`'s node when the checkpoint still holds it, else the task that pushed it."""
    parts = [part.strip() for part in task_path.split(",")]
    if len(parts) >= 2 and parts[0] == PULL:
        return parts[1]
    if len(parts) >= 2 and parts[0] == PUSH:
        if parts[1].isdigit():
            sends = values.get(TASKS) or []
            index = int(parts[1])
            if index < len(sends) and isinstance(sends[index], dict):
                return str(sends[index].get("node", task_path))
        if len(parts) >= 3 and parts[1] == PULL:
            return f"{parts[2]}:task"  # a functional API task called from `parts[2]`
    return task_path or "?"


def delta(base: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """How `new` differs from `base`: {"set": {key: value}, "del": [key]}, parts omitted
    when empty (an unchanged mapping is {})."""
    changed = {key: value for key, value in new.items() if key not in base or base[key] != value}
    removed = [key for key in base if key not in new]
    return {
        **({"set": changed} if changed else {}),
        **({"del": removed} if removed else {}),
    }


def patched(base: dict[str, Any], change: dict[str, Any]) -> dict[str, Any]:
    """`base` with a `delta` applied (a new mapping)."""
    new = {**base, **change.get("set", {})}
    for key in change.get("del", ()):
        new.pop(key, None)
    return new


def interrupts_in(value: Any) -> list[dict[str, Any]]:
    """The tagged interrupts (each with its `id` and `value`) in an `__interrupt__`
    write's JSON value, a tuple or list of them; [] when it holds none."""
    items = value.get("items") if isinstance(value, dict) and value.get(TAG) == "tuple" else value
    if not isinstance(items, list):
        return []
    return [
        item
        for item in items
        if isinstance(item, dict) and item.get(TAG) == "interrupt" and "id" in item
    ]


def interrupt_ids(value: Any) -> list[str]:
    """The ids of `interrupts_in(value)`."""
    return [str(item["id"]) for item in interrupts_in(value)]
