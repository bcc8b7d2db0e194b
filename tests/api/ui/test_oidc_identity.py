"""From a provider's checked claims to a principal and a role, and whether a session made
so may still be used on its next request."""

from __future__ import annotations

import pytest

from api.http.auth import rate_key
from api.ui.oidc_identity import identity_of, principal_of_identity
from domain.errors import RoleNotAllowedError, SignInRefusedError
from service.sessions import Identity
from service.settings import ServerSettings

ISSUER = "https://login.example.com"


def settings_with(**oidc) -> ServerSettings:
    table = {
        "issuer": ISSUER,
        "client_id": "holdpoint",
        "redirect_url": "https://hp.example.com/ui/oidc/callback",
        **oidc,
    }
    return ServerSettings(store_url="memory://").updated(oidc=table)


def test_the_first_claim_value_mapped_to_an_allowed_role_is_the_role():
    settings = settings_with(
        role_claim="groups",
        role_map={"staff": "agent", "hp-audit": "auditor", "hp-admin": "admin"},
        allowed_roles=["auditor", "admin"],
    )
    claims = {"sub": "olga", "groups": ["staff", "hp-audit", "hp-admin"]}

    assert identity_of(settings.oidc, settings, claims) == Identity("olga", "auditor", ISSUER)


def test_claims_that_give_no_allowed_role_are_refused_naming_them():
    settings = settings_with(allowed_roles=["reviewer"])

    with pytest.raises(RoleNotAllowedError) as raised:
        identity_of(settings.oidc, settings, {"sub": "agnes", "role": ["agent", "nonsense"]})

    assert str(raised.value) == (
        "agnes is not signed in: their 'role' claim ('agent', 'nonsense') gives no role "
        "allowed here (allowed: reviewer)"
    )


def test_claims_without_the_principal_claim_are_refused():
    settings = settings_with(principal_claim="email")

    with pytest.raises(SignInRefusedError, match="no usable 'email' claim"):
        identity_of(settings.oidc, settings, {"sub": "olga", "role": "reviewer"})


def test_a_session_whose_role_is_no_longer_allowed_is_refused_on_its_next_request():
    # Given a session signed in as a reviewer
    identity = Identity("olga", "reviewer", ISSUER)
    assert principal_of_identity(settings_with(), identity).as_actor()["via"] == "oidc"

    # When the server now allows auditors only, or another provider
    # Then the session's next request is refused
    with pytest.raises(RoleNotAllowedError):
        principal_of_identity(settings_with(allowed_roles=["auditor"]), identity)
    with pytest.raises(SignInRefusedError, match="no longer the provider"):
        principal_of_identity(settings_with(issuer="https://other.example"), identity)


def test_principals_signed_in_through_a_provider_are_rate_limited_each_on_their_own():
    settings = settings_with()
    olga = principal_of_identity(settings, Identity("olga", "reviewer", ISSUER))
    rita = principal_of_identity(settings, Identity("rita", "reviewer", ISSUER))

    assert rate_key(olga) != rate_key(rita)
    assert rate_key(olga) == f"oidc:{ISSUER}:olga"
