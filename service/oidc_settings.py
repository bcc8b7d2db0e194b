"""`[oidc]` of a holdpoint.toml: signing in to the UI with an OpenID Connect provider.

    [oidc]
    issuer = "https://login.example.com/realms/ops"   # discovery at its /.well-known/...
    client_id = "holdpoint"
    client_secret_env = "HOLDPOINT_OIDC_CLIENT_SECRET"  # none: a public client
    redirect_url = "https://holdpoint.example.com/ui/oidc/callback"
    scopes = ["openid", "profile", "roles"]
    principal_claim = "preferred_username"               # default: sub
    role_claim = "groups"                                # a string or a list of them
    allowed_roles = ["reviewer", "auditor"]              # default: every role mapped
    name = "Example SSO"                                 # "Sign in with Example SSO"

    [oidc.role_map]                                      # claim value -> Holdpoint role
    "holdpoint-reviewers" = "reviewer"
    "holdpoint-leads" = "manager"                        # a custom role of [roles]

Without a `role_map`, a claim value that names a role in force is that role. The same
settings come from the environment (`ENVIRONMENT`; lists comma-separated, the role map
as `value=role,value=role`), below the file's: the file's keys win. The client secret
is never written in the file: it is named by the variable that holds it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from domain.access.roles import Roles

CALLBACK_PATH = "/ui/oidc/callback"
SIGNED_OUT_PATH = "/ui/signed-out"
LOCAL_HOSTS = ("localhost", "127.0.0.1", "::1")  # where plain http is tolerated
ENVIRONMENT = {
    "issuer": "HOLDPOINT_OIDC_ISSUER",
    "client_id": "HOLDPOINT_OIDC_CLIENT_ID",
    "client_secret": "HOLDPOINT_OIDC_CLIENT_SECRET",
    "redirect_url": "HOLDPOINT_OIDC_REDIRECT_URL",
    "scopes": "HOLDPOINT_OIDC_SCOPES",
    "principal_claim": "HOLDPOINT_OIDC_PRINCIPAL_CLAIM",
    "role_claim": "HOLDPOINT_OIDC_ROLE_CLAIM",
    "role_map": "HOLDPOINT_OIDC_ROLE_MAP",
    "allowed_roles": "HOLDPOINT_OIDC_ALLOWED_ROLES",
    "name": "HOLDPOINT_OIDC_NAME",
}
_TEXT = ("issuer", "client_id", "redirect_url", "principal_claim", "role_claim", "name")
_LISTS = ("scopes", "allowed_roles")
KNOWN = {*_TEXT, *_LISTS, "role_map", "client_secret_env", "client_secret"}


@dataclass(frozen=True)
class OidcSettings:
    """One OpenID Connect provider the UI signs people in with."""

    issuer: str
    client_id: str
    redirect_url: str
    client_secret: str | None = None
    scopes: tuple[str, ...] = ("openid", "profile")
    principal_claim: str = "sub"
    role_claim: str = "role"
    role_map: Mapping[str, str] = field(default_factory=dict)
    allowed_roles: tuple[str, ...] = ()  # none listed: every role the map gives
    name: str = ""

    @property
    def display_name(self) -> str:
        return self.name or urlsplit(self.issuer).hostname or self.issuer

    @property
    def signed_out_url(self) -> str:
        """Where the provider sends the browser back after signing out there."""
        parts = urlsplit(self.redirect_url)
        return f"{parts.scheme}://{parts.netloc}{SIGNED_OUT_PATH}"

    def role_of(self, value: str) -> str | None:
        """The Holdpoint role a role claim's value gives, if any."""
        return self.role_map.get(value) if self.role_map else value

    def allows(self, role: str) -> bool:
        return role in self.allowed_roles if self.allowed_roles else True

    def check_roles(self, roles: Roles) -> OidcSettings:
        """ValueError unless every role the map gives and every allowed one is in force."""
        for role in (*self.role_map.values(), *self.allowed_roles):
            if role not in roles.names():
                msg = (
                    f"oidc: {role!r} is not a role in force (the built-in ones, or a custom one "
                    f"of [roles]): {', '.join(roles.names())}"
                )
                raise ValueError(msg)
        return self

    def __repr__(self) -> str:  # never the secret, in a log or a traceback
        return f"OidcSettings(issuer={self.issuer!r}, client_id={self.client_id!r})"


def oidc_settings(table: Any, environ: Mapping[str, str] | None = None) -> OidcSettings:
    """The `[oidc]` table over the environment's HOLDPOINT_OIDC_* variables, checked;
    ValueError naming the setting at fault."""
    if isinstance(table, OidcSettings):
        return table
    if not isinstance(table, dict):
        raise ValueError("oidc must be a table ([oidc])")
    unknown = sorted(set(table) - KNOWN)
    if unknown:
        raise ValueError(f"oidc: unknown setting {unknown[0]!r}; known: {', '.join(sorted(KNOWN))}")
    environ = os.environ if environ is None else environ
    merged = {**environment_table(environ), **table}
    values: dict[str, Any] = {}
    for name in _TEXT:
        if name in merged:
            value = merged[name]
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"oidc.{name} must be a non-empty string, not {value!r}")
            values[name] = value.strip()
    for name in ("issuer", "client_id", "redirect_url"):
        if name not in values:
            msg = f"oidc.{name} is required (or the environment's {ENVIRONMENT[name]})"
            raise ValueError(msg)
    for name in _LISTS:
        if name in merged:
            values[name] = _names(name, merged[name])
    if "scopes" in values and "openid" not in values["scopes"]:
        raise ValueError("oidc.scopes must include openid (OpenID Connect's own scope)")
    if "role_map" in merged:
        values["role_map"] = _role_map(merged["role_map"])
    values["client_secret"] = _client_secret(table, merged, environ)
    _check_url("issuer", values["issuer"])
    _check_url("redirect_url", values["redirect_url"])
    if urlsplit(values["redirect_url"]).path != CALLBACK_PATH:
        msg = f"oidc.redirect_url must end in {CALLBACK_PATH}, where the UI takes the answer"
        raise ValueError(msg)
    return OidcSettings(**values)


def environment_table(environ: Mapping[str, str]) -> dict[str, Any]:
    """The settings the environment gives (an empty table if it gives none)."""
    table: dict[str, Any] = {}
    for name, variable in ENVIRONMENT.items():
        text = environ.get(variable, "").strip()
        if not text:
            continue
        if name in _LISTS:
            table[name] = [part.strip() for part in text.split(",") if part.strip()]
        elif name == "role_map":
            pairs = [part.partition("=") for part in text.split(",") if part.strip()]
            if any(not sep for _, sep, _ in pairs):
                raise ValueError(f"{variable} must be value=role pairs, comma-separated")
            table[name] = {value.strip(): role.strip() for value, _, role in pairs}
        else:
            table[name] = text
    return table


def _names(name: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) and v for v in value):
        raise ValueError(f"oidc.{name} must be a list of names, not {value!r}")
    return tuple(value)


def _role_map(value: Any) -> dict[str, str]:
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) and k and v for k, v in value.items()
    ):
        raise ValueError(f"oidc.role_map must map claim values to role names, not {value!r}")
    return dict(value)


def _client_secret(
    table: dict[str, Any], merged: dict[str, Any], environ: Mapping[str, str]
) -> str | None:
    if "client_secret" in table:
        msg = (
            "oidc.client_secret must not be written in the file: name the environment "
            "variable that holds it with client_secret_env"
        )
        raise ValueError(msg)
    variable = table.get("client_secret_env")
    if variable is None:
        secret = merged.get("client_secret")
        return str(secret) if secret else None
    if not isinstance(variable, str) or not variable:
        raise ValueError("oidc.client_secret_env must name an environment variable")
    secret = environ.get(variable, "")
    if not secret:
        raise ValueError(f"oidc.client_secret_env: {variable} is not set (the client's secret)")
    return secret


def _check_url(name: str, url: str) -> None:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"oidc.{name} must be an https:// URL, not {url!r}")
    if parts.scheme == "http" and parts.hostname not in LOCAL_HOSTS:
        msg = f"oidc.{name} must use https (plain http only on this machine): {url!r}"
        raise ValueError(msg)
    if parts.query or parts.fragment:
        raise ValueError(f"oidc.{name} must have no query or fragment: {url!r}")
