"""The assistants a server answers for: each served graph's own, and those with recorded
configuration (domain/assistants), found by id (or a served graph's name).

A served graph's own assistant is LangGraph's server's "system" assistant: made by the
server, at version 1, with nothing configured, and on record only once someone changes
it. What a run takes from its assistant (`run_config`): the assistant's `configurable`
and `recursion_limit` under the run's own, its `context` under the run's, and, for an
assistant with recorded configuration, its id and version in the run's metadata, which
the thread records (`WorkflowThread.use_assistant`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from domain.assistants.assistant import ASSISTANT_KEYS, Assistant, AssistantVersion
from domain.assistants.assistants import Assistants
from domain.errors import AssistantVersionNotFoundError
from domain.record.application import Workflows
from projections.assistant_index import AssistantRow
from service.assistant_ids import assistant_id

SYSTEM_METADATA = {"created_by": "system"}


@dataclass(frozen=True)
class Found:
    """An assistant at one version (its latest unless asked), with its times."""

    version: AssistantVersion
    created_at: str
    updated_at: str
    recorded: bool  # configured on record; False: a served graph's own, as the server made it

    @property
    def assistant_id(self) -> str:
        return self.version.assistant_id

    @property
    def graph_id(self) -> str:
        return self.version.graph_id

    def run_keys(self) -> dict[str, Any]:
        """What a run by it names in its metadata (none for a served graph's own)."""
        if not self.recorded:
            return {}
        return {"assistant_id": self.assistant_id, "assistant_version": self.version.version}


def served_version(graph_id: str, started_at: datetime) -> AssistantVersion:
    """A served graph's own assistant, as the server makes it."""
    return AssistantVersion(
        assistant_id=assistant_id(graph_id),
        version=1,
        graph_id=graph_id,
        config={},
        context={},
        metadata=dict(SYSTEM_METADATA),
        name=graph_id,
        description=None,
        created_at=started_at.isoformat(),
    )


def served_graph_of(graphs: Iterable[str], name_or_id: str) -> str | None:
    """The served graph whose own assistant `name_or_id` names (its name or id)."""
    for name in graphs:
        if name_or_id in (name, assistant_id(name)):
            return name
    return None


def find(
    store: Workflows,
    graphs: Iterable[str],
    started_at: datetime,
    name_or_id: str,
    version: int | None = None,
) -> Found | None:
    """The assistant `name_or_id` names, at `version` (its latest if None): recorded, or
    a served graph's own; None if there is none (or it was deleted)."""
    served = served_graph_of(graphs, name_or_id)
    wanted = assistant_id(served) if served is not None else name_or_id
    recorded = Assistants(store).read(wanted)
    if recorded is not None and not recorded.deleted:
        return _recorded(recorded, version)
    if served is None or recorded is not None:  # a deleted one stays deleted
        return None
    made = served_version(served, started_at)
    if version not in (None, 1):
        raise AssistantVersionNotFoundError(made.assistant_id, int(str(version)), [1])
    return Found(made, made.created_at, made.created_at, recorded=False)


def _recorded(assistant: Assistant, version: int | None) -> Found:
    if version is not None and version not in assistant.versions:
        raise AssistantVersionNotFoundError(
            assistant.assistant_id, version, sorted(assistant.versions)
        )
    at = assistant.current if version is None else assistant.versions[version]
    return Found(at, assistant.created_on.isoformat(), assistant.modified_on.isoformat(), True)


def run_config(
    found: Found, config: dict[str, Any], context: dict[str, Any] | None
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """A run's `config` (its user's part: `configurable`, `recursion_limit`) and `context`
    with its assistant's under them."""
    configured = found.version.config
    merged = dict(config)
    configurable = {**(configured.get("configurable") or {}), **(config.get("configurable") or {})}
    if configurable:
        merged["configurable"] = configurable
    if "recursion_limit" in configured and "recursion_limit" not in config:
        merged["recursion_limit"] = configured["recursion_limit"]
    if not found.version.context:
        return merged, context
    return merged, {**found.version.context, **(context or {})}


def of_thread(store: Workflows, metadata: dict[str, Any]) -> Found | None:
    """The recorded assistant version a thread's metadata names (deleted since or not:
    a thread it began is still answered with the configuration it began with); None for
    a served graph's own."""
    named = [metadata.get(key) for key in ASSISTANT_KEYS]
    if not isinstance(named[0], str) or not isinstance(named[1], int):
        return None
    assistant = Assistants(store).read(named[0])
    if assistant is None or named[1] not in assistant.versions:
        return None
    return _recorded(assistant, named[1])


def listed(
    graphs: Iterable[str], started_at: datetime, rows: Iterable[AssistantRow]
) -> list[Found]:
    """Every assistant: those on record (the read model's `rows`), and each served
    graph's own that is not on record."""
    found = [
        Found(
            AssistantVersion(
                assistant_id=row.assistant_id,
                version=row.version,
                created_at=row.updated_at,
                **row.fields,
            ),
            row.created_at,
            row.updated_at,
            recorded=True,
        )
        for row in rows
    ]
    recorded = {f.assistant_id for f in found}
    for name in graphs:
        if assistant_id(name) not in recorded:
            made = served_version(name, started_at)
            found.append(Found(made, made.created_at, made.created_at, recorded=False))
    return found


def matches(
    found: Found, graph_id: str | None, name: str | None, metadata: dict[str, Any] | None
) -> bool:
    """As LangGraph's server searches: the graph, a part of the name (any case), and
    metadata that contains the given."""
    version = found.version
    return (
        graph_id in (None, version.graph_id)
        and (not name or name.lower() in version.name.lower())
        and contains(version.metadata, metadata or {})
    )


def contains(whole: Any, part: Any) -> bool:
    """PostgreSQL's JSON containment (`@>`), which LangGraph's server filters metadata by."""
    if isinstance(part, dict):
        return isinstance(whole, dict) and all(
            key in whole and contains(whole[key], value) for key, value in part.items()
        )
    if isinstance(part, list):
        return isinstance(whole, list) and all(
            any(contains(item, wanted) for item in whole) for wanted in part
        )
    return bool(whole == part)


def at_latest(assistant: Assistant) -> Found:
    """A recorded assistant at its latest version."""
    return _recorded(assistant, None)
