"""Who acts: the actor recorded on every event a person causes.

The HTTP API sets the actor from an authenticated key. Python callers name
one in `config["configurable"]["actor"]`; without one, the local operating
system user is recorded, marked unauthenticated.
"""

from __future__ import annotations

import getpass
from functools import lru_cache
from typing import Any

from domain.errors import InvalidUpdateError
from domain.record.hashing import to_json

ACTOR_EXTRAS = ("scope", "attestation")


@lru_cache(maxsize=1)
def _os_user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


def local_actor() -> dict[str, Any]:
    """Who acts when a Python caller names no one: the OS user, unauthenticated."""
    return {"id": _os_user(), "role": None, "authenticated": False, "via": "local"}


def resolve_actor(actor: Any) -> dict[str, Any]:
    """The actor a Python caller named in the config, or the local OS user."""
    if actor is None:
        return local_actor()
    if isinstance(actor, str):
        return {"id": actor, "role": None, "authenticated": False, "via": "config"}
    if isinstance(actor, dict) and actor.get("id"):
        record: dict[str, Any] = {
            "id": str(actor["id"]),
            "role": None if actor.get("role") is None else str(actor["role"]),
            "authenticated": bool(actor.get("authenticated", False)),
            "via": str(actor.get("via", "config")),
        }
        for extra in ACTOR_EXTRAS:  # a key's scope and attestation (Principal.as_actor)
            if isinstance(actor.get(extra), dict):
                record[extra] = actor[extra]
        if isinstance(actor.get("issuer"), str):  # the provider of a sign-in with OIDC
            record["issuer"] = actor["issuer"]
        return to_json(record, "The actor")  # type: ignore[no-any-return]
    msg = 'config["configurable"]["actor"] must be {"id": ..., "role": ...}'
    raise InvalidUpdateError(msg)
