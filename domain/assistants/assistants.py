"""The assistants' use cases: create, update (a new version), choose the latest version,
delete; read one from its events.

Which graphs exist is the server's to know: callers check `graph_id` before asking. A
served graph's own assistant (made by the server, not recorded) is taken up as a
recorded one at its first change (`update(..., base=...)`), so that every version
after the served one is a fact too.

Fields follow LangGraph's server: `context` and `config["configurable"]` are kept the
same (either may be given, not both); an update's `metadata` is merged into the
latest's, and fields it leaves out keep their latest values.
"""

from __future__ import annotations

from typing import Any, Literal
from uuid import UUID, uuid4

from eventsourcing.persistence import IntegrityError

from domain.assistants.assistant import FIELDS, Assistant, AssistantVersion, assistant_uuid
from domain.engine.runtime import REQUEST_KEY, engine_keys
from domain.errors import (
    AssistantChangedError,
    AssistantExistsError,
    AssistantNotFoundError,
    InvalidAssistantError,
)
from domain.record.application import Workflows, fold_events
from domain.record.hashing import to_json

UNTITLED = "Untitled"  # LangGraph's server's name for an assistant given none
# Each run's own keys of `configurable`: who runs it, on which thread, from where, with
# what decision. An assistant configuring one would speak for every run it makes.
PER_RUN_KEYS = frozenset(
    {
        "actor",
        "thread_id",
        "run_id",
        "checkpoint_id",
        "checkpoint_ns",
        "fork_thread_id",
        "idempotency_key",
        "decision",
        "reason",
        "payload_digest",
        REQUEST_KEY,
    }
)


class Assistants:
    def __init__(self, store: Workflows) -> None:
        self.store = store

    def create(
        self,
        *,
        graph_id: str,
        actor: dict[str, Any],
        assistant_id: str | None = None,
        config: dict[str, Any] | None = None,
        context: dict[str, Any] | None = None,
        metadata: dict[str, Any] | None = None,
        name: str | None = None,
        description: str | None = None,
        if_exists: Literal["raise", "do_nothing"] = "raise",
    ) -> Assistant:
        """A new assistant at version 1, recorded. One with that id already: the
        existing one with `do_nothing`, AssistantExistsError with `raise`."""
        assistant_id = check_id(assistant_id) if assistant_id is not None else str(uuid4())
        existing = self.read(assistant_id)
        if existing is not None and not existing.deleted:
            if if_exists == "do_nothing":
                return existing
            raise AssistantExistsError(assistant_id)
        if existing is not None:  # deleted: its id stays spent, as its events stay
            raise AssistantExistsError(assistant_id)
        config, context = synced(config, context)
        fields = checked_fields(graph_id, config, context, metadata, name or UNTITLED, description)
        assistant = Assistant(
            assistant_id=assistant_id, actor=to_json(actor, "The actor"), **fields
        )
        try:
            self.store.save(assistant)
        except IntegrityError:  # made meanwhile by another writer
            return self._existing(assistant_id, if_exists)
        return assistant

    def _existing(self, assistant_id: str, if_exists: str) -> Assistant:
        existing = self.read(assistant_id)
        if if_exists == "do_nothing" and existing is not None and not existing.deleted:
            return existing
        raise AssistantExistsError(assistant_id)

    def get(self, assistant_id: str) -> Assistant:
        """The assistant, or AssistantNotFoundError (never made, or deleted)."""
        assistant = self.read(assistant_id)
        if assistant is None or assistant.deleted:
            raise AssistantNotFoundError(assistant_id)
        return assistant

    def update(
        self,
        assistant_id: str,
        changes: dict[str, Any],
        actor: dict[str, Any],
        *,
        base: AssistantVersion | None = None,
    ) -> Assistant:
        """A new version: the latest with `changes` (any of graph_id, config, context,
        metadata, name, description). `base`: the served graph's own assistant, taken up
        as version 1 if it is not on record yet."""
        unknown = sorted(set(changes) - set(FIELDS))
        if unknown:
            raise InvalidAssistantError(f"{unknown[0]!r} of an assistant cannot be changed")
        actor = to_json(actor, "The actor")
        assistant = self.read(assistant_id)
        if assistant is None and base is not None:
            assistant = Assistant(assistant_id=assistant_id, actor=actor, **base.fields())
        if assistant is None or assistant.deleted:
            raise AssistantNotFoundError(assistant_id)
        latest = assistant.current
        config, context = synced(changes.get("config"), changes.get("context"))
        description, metadata = changes.get("description"), changes.get("metadata") or {}
        if not isinstance(metadata, dict):
            raise InvalidAssistantError("Invalid metadata: a JSON object")
        fields = checked_fields(
            changes.get("graph_id") or latest.graph_id,
            config or latest.config,
            latest.context if context is None else context,
            {**latest.metadata, **metadata},
            changes.get("name") or latest.name,
            latest.description if description is None else description,
        )
        assistant.update(fields, actor)
        self._save(assistant)
        return assistant

    def set_latest(self, assistant_id: str, version: int, actor: dict[str, Any]) -> Assistant:
        """Make a version the one that runs (AssistantVersionNotFoundError if none)."""
        assistant = self.get(assistant_id)
        assistant.set_latest(version, to_json(actor, "The actor"))
        self._save(assistant)
        return assistant

    def delete(self, assistant_id: str, actor: dict[str, Any]) -> None:
        assistant = self.get(assistant_id)
        assistant.delete(to_json(actor, "The actor"))
        self._save(assistant)

    def read(self, assistant_id: str) -> Assistant | None:
        """The assistant as its events leave it, deleted or not; None if never made."""
        assistant: Assistant | None = fold_events(
            None, self.store.events.get(assistant_uuid(assistant_id))
        )
        return assistant

    def _save(self, assistant: Assistant) -> None:
        if not assistant.pending_events:
            return  # nothing changed: nothing to record
        try:
            self.store.save(assistant)
        except IntegrityError:
            raise AssistantChangedError(assistant.assistant_id) from None


def check_id(assistant_id: str) -> str:
    """An assistant id as LangGraph's server takes it: a UUID."""
    try:
        return str(UUID(assistant_id))
    except (ValueError, TypeError, AttributeError):
        raise InvalidAssistantError(
            f"Invalid assistant_id {assistant_id!r}: must be a UUID"
        ) from None


def synced(
    config: dict[str, Any] | None, context: dict[str, Any] | None
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """`config` and `context` as given, made the same where one is: LangGraph's server
    keeps `context` and `config["configurable"]` equal, and refuses both at once."""
    config = to_json(config or {}, "The config")
    context = None if context is None else to_json(context, "The context")
    if not isinstance(config, dict) or not isinstance(context, dict | None):
        raise InvalidAssistantError("Invalid config or context: a JSON object")
    config = dict(config)
    if config.get("configurable") and context:
        msg = (
            "Cannot specify both configurable and context. Prefer setting context alone "
            "(LangGraph's server keeps the two the same)"
        )
        raise InvalidAssistantError(msg)
    if config.get("configurable"):
        context = dict(config["configurable"])
    elif context:
        config["configurable"] = dict(context)
    taken = sorted(PER_RUN_KEYS & set(context or {}))
    if taken:
        msg = f"Invalid context: {taken[0]!r} is each run's own, not an assistant's to configure"
        raise InvalidAssistantError(msg)
    forged = engine_keys(context or {})
    if forged:
        msg = f"Invalid context: {forged[0]!r} is the graph engine's own, not an assistant's"
        raise InvalidAssistantError(msg)
    return config, context


def checked_fields(
    graph_id: str,
    config: dict[str, Any],
    context: dict[str, Any] | None,
    metadata: dict[str, Any] | None,
    name: str,
    description: str | None,
) -> dict[str, Any]:
    """Every field of a version, as the record takes it."""
    metadata = to_json(metadata or {}, "The metadata")
    if not isinstance(metadata, dict):
        raise InvalidAssistantError("Invalid metadata: a JSON object")
    if not isinstance(name, str) or not isinstance(description, str | None):
        raise InvalidAssistantError("Invalid name or description: text")
    return {
        "graph_id": graph_id,
        "config": config,
        "context": context or {},
        "metadata": metadata,
        "name": name,
        "description": description,
    }
