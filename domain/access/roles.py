"""Roles and their permissions: the four built in, and custom ones a holdpoint.toml adds.

A permission is one of `PERMISSIONS` (the HTTP API's `api.http.auth.Permission`, by
its lower-case name). A custom role names its own, from that set:

    [roles.manager]
    permissions = ["read", "queue", "decide"]

The built-in roles cannot be redefined, so that a key's role means what the
README says it means on every server. The set in force is recorded whenever it
changes (`domain.access.role_records`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from domain.errors import InvalidRoleError, InvalidRolesError

PERMISSIONS = ("read", "run", "decide", "cancel", "queue", "audit", "lift")
BUILT_IN_ROLES: dict[str, tuple[str, ...]] = {
    "agent": ("read", "run"),
    "reviewer": ("read", "decide", "cancel", "queue"),
    "auditor": ("read", "queue", "audit"),
    "admin": PERMISSIONS,
}
ROLE_NAME = re.compile(r"[a-z][a-z0-9_-]{0,31}")


@dataclass(frozen=True)
class Roles:
    """The roles in force: the built-in ones and `custom` (role -> its permissions)."""

    custom: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def names(self) -> tuple[str, ...]:
        return (*BUILT_IN_ROLES, *sorted(self.custom))

    def permissions(self, role: str | None) -> tuple[str, ...]:
        """What `role` may do; nothing for a role that is not in force."""
        if role is None:
            return ()
        return BUILT_IN_ROLES.get(role) or tuple(self.custom.get(role, ()))

    def holding(self, *permissions: str) -> tuple[str, ...]:
        """The roles that hold at least one of `permissions`."""
        return tuple(r for r in self.names() if set(self.permissions(r)) & set(permissions))

    def check(self, role: str) -> str:
        """InvalidRoleError, listing the roles in force, unless `role` is one."""
        if role not in self.names():
            raise InvalidRoleError(role, self.names())
        return role

    def as_record(self) -> dict[str, list[str]]:
        """The custom roles as recorded (RolesConfigured): plain JSON, in a stable order."""
        return {role: list(self.custom[role]) for role in sorted(self.custom)}


BUILT_IN = Roles()


def custom_roles(table: Any) -> Roles:
    """The roles of a holdpoint.toml's `[roles]` table; InvalidRolesError naming the role
    and the permission at fault (an unknown permission, a built-in role redefined)."""
    if table is None:
        return BUILT_IN
    if isinstance(table, Roles):
        return table
    if not isinstance(table, Mapping):
        raise InvalidRolesError(f"[roles] must be a table of roles, not {table!r}")
    return Roles({str(name): _permissions_of(name, entry) for name, entry in table.items()})


def _permissions_of(name: Any, entry: Any) -> tuple[str, ...]:
    if not isinstance(name, str) or not ROLE_NAME.fullmatch(name):
        msg = (
            f"Role {name!r}: a role's name is 1 to 32 lower-case letters, digits, '_' or '-', "
            "starting with a letter"
        )
        raise InvalidRolesError(msg)
    if name in BUILT_IN_ROLES:
        msg = f"Role {name!r} is built in and cannot be redefined: name a role of your own"
        raise InvalidRolesError(msg)
    listed = entry.get("permissions") if isinstance(entry, Mapping) else None
    if not isinstance(listed, list) or not listed:
        msg = f'Role {name!r} needs its permissions: permissions = ["read", "decide", ...]'
        raise InvalidRolesError(msg)
    unknown = [p for p in listed if p not in PERMISSIONS]
    if unknown:
        msg = (
            f"Role {name!r} names an unknown permission {unknown[0]!r}: use "
            f"{', '.join(PERMISSIONS)}"
        )
        raise InvalidRolesError(msg)
    return tuple(p for p in PERMISSIONS if p in listed)
