"""An assistant: a served graph with configuration of its own, as its events tell it.

LangGraph's server keeps assistants in a table it overwrites; here each version is a
fact. `AssistantCreated` records version 1, each `AssistantUpdated` a whole new version
(every field as it now stands, so that a version reads alone), `LatestVersionSelected` which
version runs, and `AssistantDeleted` its end: each with who did it. A run by the
assistant names its id and version on the thread it runs (`WorkflowThread.use_assistant`),
and the version's own event holds the configuration that run had.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from uuid import NAMESPACE_URL, UUID, uuid5

from eventsourcing.domain import Aggregate

from domain.errors import AssistantVersionNotFoundError

ASSISTANT_NAMESPACE = uuid5(NAMESPACE_URL, "https://holdpoint.dev/assistants")
# What a run by a recorded assistant names in its metadata, and its thread records
ASSISTANT_KEYS = ("assistant_id", "assistant_version")
FIELDS = ("graph_id", "config", "context", "metadata", "name", "description")


def assistant_uuid(assistant_id: str) -> UUID:
    """The aggregate's id: derived, so that a client's chosen id never names another
    aggregate of the store."""
    return uuid5(ASSISTANT_NAMESPACE, assistant_id)


@dataclass(frozen=True)
class AssistantVersion:
    """One version of an assistant: what a run by it is given."""

    assistant_id: str
    version: int
    graph_id: str
    config: dict[str, Any]
    context: dict[str, Any]
    metadata: dict[str, Any]
    name: str
    description: str | None
    created_at: str

    def fields(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in FIELDS}


class Assistant(Aggregate):
    class AssistantCreated(Aggregate.Created):
        assistant_id: str
        graph_id: str
        config: dict[str, Any]
        context: dict[str, Any]
        metadata: dict[str, Any]
        name: str
        description: str | None
        actor: dict[str, Any]

    class AssistantUpdated(Aggregate.Event):
        """A new version, which becomes the latest: every field as it now stands."""

        version: int
        graph_id: str
        config: dict[str, Any]
        context: dict[str, Any]
        metadata: dict[str, Any]
        name: str
        description: str | None
        actor: dict[str, Any]

        def apply(self, aggregate: Any) -> None:
            aggregate.add_version(self.version, self, self.timestamp.isoformat())

    class LatestVersionSelected(Aggregate.Event):
        version: int
        actor: dict[str, Any]

        def apply(self, aggregate: Any) -> None:
            aggregate.latest = self.version

    class AssistantDeleted(Aggregate.Event):
        actor: dict[str, Any]

        def apply(self, aggregate: Any) -> None:
            aggregate.deleted = True

    @staticmethod
    def create_id(assistant_id: str) -> UUID:
        return assistant_uuid(assistant_id)

    def __init__(
        self,
        assistant_id: str,
        graph_id: str,
        config: dict[str, Any],
        context: dict[str, Any],
        metadata: dict[str, Any],
        name: str,
        description: str | None,
        actor: dict[str, Any],
    ) -> None:
        self.assistant_id = assistant_id
        self.created_by = actor
        self.versions: dict[int, AssistantVersion] = {}
        self.latest = 1
        self.deleted = False
        self.versions[1] = AssistantVersion(
            assistant_id,
            1,
            graph_id,
            config,
            context,
            metadata,
            name,
            description,
            created_at=self.created_on.isoformat(),
        )

    def add_version(self, version: int, source: Any, created_at: str) -> None:
        fields = {name: getattr(source, name) for name in FIELDS}
        self.versions[version] = AssistantVersion(
            self.assistant_id, version, created_at=created_at, **fields
        )
        self.latest = version

    @property
    def current(self) -> AssistantVersion:
        """The version that runs."""
        return self.versions[self.latest]

    def update(self, fields: dict[str, Any], actor: dict[str, Any]) -> None:
        """A new version with `fields` (every field, checked by the caller), made the
        latest; recorded even when it equals the latest, as LangGraph's server counts it."""
        version = max(self.versions) + 1
        self.trigger_event(self.AssistantUpdated, version=version, actor=actor, **fields)

    def set_latest(self, version: int, actor: dict[str, Any]) -> None:
        if version not in self.versions:
            raise AssistantVersionNotFoundError(self.assistant_id, version, sorted(self.versions))
        if version != self.latest:
            self.trigger_event(self.LatestVersionSelected, version=version, actor=actor)

    def delete(self, actor: dict[str, Any]) -> None:
        if not self.deleted:
            self.trigger_event(self.AssistantDeleted, actor=actor)
