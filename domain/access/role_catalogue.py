"""The record of the custom roles in force: one aggregate of fixed id for the store.

Its first event, `RolesConfigured`, records the custom roles (role -> permissions) and
who configured them; each later change of the set, `RolesReconfigured`, records the
whole set again, so that any one event says what was in force from then on. The
use cases (record when changed, read) are in `domain.access.role_records`.
"""

from __future__ import annotations

from typing import Any
from uuid import NAMESPACE_URL, UUID, uuid5

from eventsourcing.domain import Aggregate

ROLE_CATALOGUE_ID = uuid5(NAMESPACE_URL, "https://holdpoint.dev/role-catalogue")


class RoleCatalogue(Aggregate):
    """The custom roles configured for the store, each change with who made it."""

    class RolesConfigured(Aggregate.Created):
        """The custom roles first configured: role -> its permissions."""

        roles: dict[str, list[str]]
        actor: dict[str, Any] | None

    class RolesReconfigured(Aggregate.Event):
        """The custom roles changed: the whole set now in force (empty: none)."""

        roles: dict[str, list[str]]
        actor: dict[str, Any] | None

        def apply(self, aggregate: Any) -> None:
            aggregate.roles = self.roles
            aggregate.configured_by = self.actor

    @staticmethod
    def create_id() -> UUID:
        return ROLE_CATALOGUE_ID

    def __init__(self, roles: dict[str, list[str]], actor: dict[str, Any] | None) -> None:
        self.roles = roles
        self.configured_by = actor
