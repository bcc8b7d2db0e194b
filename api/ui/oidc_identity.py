"""Who a provider's ID token says signs in, and whether they still may, on each request.

The principal is the configured claim's value (`principal_claim`, `sub` by default);
the role comes from `role_claim`, a string or a list of them, each value mapped to a
Holdpoint role (`role_map`; without one, a value that names a role in force is that
role). The first value, in the claim's order, whose role is in force and allowed
(`allowed_roles`) is the session's role. A token with no such value is refused, and
the refusal says which roles its claim gave and which are allowed.
"""

from __future__ import annotations

from typing import Any

from domain.access.identity import PRINCIPAL_ID_MAX, Principal
from domain.errors import RoleNotAllowedError, SignInRefusedError
from service.oidc_settings import OidcSettings
from service.sessions import Identity
from service.settings import ServerSettings


def identity_of(oidc: OidcSettings, settings: ServerSettings, claims: dict[str, Any]) -> Identity:
    """The principal and role an ID token's (checked) claims give; SignInRefusedError or
    RoleNotAllowedError saying why none."""
    principal = claims.get(oidc.principal_claim)
    if not isinstance(principal, str) or not principal or len(principal) > PRINCIPAL_ID_MAX:
        msg = (
            f"The provider's ID token has no usable {oidc.principal_claim!r} claim to name "
            f"who signs in (a string of 1 to {PRINCIPAL_ID_MAX} characters)"
        )
        raise SignInRefusedError(msg)
    value = claims.get(oidc.role_claim)
    values = [value] if isinstance(value, str) else value if isinstance(value, list) else []
    roles = [oidc.role_of(str(v)) for v in values]
    in_force = [r for r in roles if r is not None and r in settings.roles.names()]
    for role in in_force:
        if oidc.allows(role):
            return Identity(principal, role, oidc.issuer)
    allowed = ", ".join(oidc.allowed_roles) if oidc.allowed_roles else "any mapped role"
    if not values:
        msg = (
            f"{principal} is not signed in: the provider's ID token has no {oidc.role_claim!r} "
            f"claim to give a role (allowed: {allowed})"
        )
    else:
        given = ", ".join(repr(v) for v in values)
        msg = (
            f"{principal} is not signed in: their {oidc.role_claim!r} claim ({given}) gives "
            f"no role allowed here (allowed: {allowed})"
        )
    raise RoleNotAllowedError(msg)


def principal_of_identity(settings: ServerSettings, identity: Identity) -> Principal:
    """The principal of a session signed in through a provider, if the provider is still
    the one configured and the role still allowed; SignInRefusedError if not."""
    oidc = settings.oidc
    if oidc is None or oidc.issuer != identity.issuer:
        msg = f"{identity.issuer} is no longer the provider this server signs in with"
        raise SignInRefusedError(msg)
    if identity.role not in settings.roles.names() or not oidc.allows(identity.role):
        msg = f"the role {identity.role} is no longer allowed to sign in with {oidc.display_name}"
        raise RoleNotAllowedError(msg)
    return Principal(
        identity.principal, identity.role, key_id="", via="oidc", issuer=identity.issuer
    )
