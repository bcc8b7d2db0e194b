"""Custom roles on record: recorded when the configured set changes, read by every process.

A server records its configured roles at start, and `holdpoint keys create --config`
before it makes a key; an unchanged set records nothing. Keys are checked against
the roles on record, so that `keys create --role manager` works once a server (or
the command itself) has recorded `manager`.
"""

from __future__ import annotations

from typing import Any

from eventsourcing.persistence import IntegrityError

from domain.access.role_catalogue import ROLE_CATALOGUE_ID, RoleCatalogue
from domain.access.roles import Roles
from domain.record.application import Workflows, fold_events
from domain.record.hashing import to_json

ATTEMPTS = 3  # another process recording at the same moment: read again, compare again


def recorded_roles(store: Workflows) -> Roles:
    """The roles on record: the built-in ones and the custom ones last recorded."""
    catalogue = _read(store)
    if catalogue is None:
        return Roles()
    return Roles({role: tuple(permissions) for role, permissions in catalogue.roles.items()})


def record_roles(store: Workflows, roles: Roles, actor: dict[str, Any] | None) -> bool:
    """Record `roles` as the set in force unless they are already; whether it recorded."""
    wanted = roles.as_record()
    for _ in range(ATTEMPTS):
        catalogue = _read(store)
        if catalogue is None and not wanted:
            return False
        if catalogue is not None and catalogue.roles == wanted:
            return False
        who = to_json(actor, "The actor")
        if catalogue is None:
            catalogue = RoleCatalogue(roles=wanted, actor=who)
        else:
            catalogue.trigger_event(RoleCatalogue.RolesReconfigured, roles=wanted, actor=who)
        try:
            store.save(catalogue)
        except IntegrityError:  # recorded by another process meanwhile: compare again
            continue
        return True
    msg = "The roles changed on record by other processes meanwhile, three times: try again"
    raise RuntimeError(msg)


def _read(store: Workflows) -> RoleCatalogue | None:
    catalogue: RoleCatalogue | None = fold_events(None, store.events.get(ROLE_CATALOGUE_ID))
    return catalogue
