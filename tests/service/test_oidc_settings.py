"""`[oidc]` of a holdpoint.toml and HOLDPOINT_OIDC_*: what a server signs people in with,
and the sentence that names a setting that cannot work."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from service.graph_loader import read_config
from service.oidc_settings import OidcSettings, oidc_settings
from service.settings import ServerSettings

TABLE = {
    "issuer": "https://login.example.com/realms/ops",
    "client_id": "holdpoint",
    "redirect_url": "https://holdpoint.example.com/ui/oidc/callback",
}


def test_a_holdpoint_toml_names_the_provider_and_its_secret_comes_from_the_environment(
    tmp_path, monkeypatch
):
    # Given a holdpoint.toml with [oidc], its secret named by a variable that holds it
    monkeypatch.setenv("SSO_SECRET", "the-client-secret")
    config = tmp_path / "holdpoint.toml"
    config.write_text(
        """
[roles.manager]
permissions = ["read", "queue", "decide"]

[oidc]
issuer = "https://login.example.com/realms/ops"
client_id = "holdpoint"
client_secret_env = "SSO_SECRET"
redirect_url = "https://holdpoint.example.com/ui/oidc/callback"
scopes = ["openid", "profile", "groups"]
principal_claim = "preferred_username"
role_claim = "groups"
allowed_roles = ["reviewer", "manager"]
name = "Example SSO"

[oidc.role_map]
"hp-reviewers" = "reviewer"
"hp-leads" = "manager"
""",
        encoding="utf-8",
    )

    # When a server reads it
    _, server = read_config(config)
    settings = ServerSettings(store_url="memory://").updated(**server)

    # Then it signs in with that provider, as configured
    oidc = settings.oidc
    assert oidc is not None
    assert (oidc.issuer, oidc.client_id, oidc.client_secret) == (
        "https://login.example.com/realms/ops",
        "holdpoint",
        "the-client-secret",
    )
    assert oidc.scopes == ("openid", "profile", "groups")
    assert (oidc.role_of("hp-leads"), oidc.role_of("admin")) == ("manager", None)
    assert (oidc.allows("manager"), oidc.allows("admin")) == (True, False)
    assert oidc.display_name == "Example SSO"
    assert oidc.signed_out_url == "https://holdpoint.example.com/ui/signed-out"
    # And its secret never shows in a log line
    assert "the-client-secret" not in repr(oidc)


def test_the_environment_configures_a_provider_and_a_file_overrides_it(monkeypatch):
    # Given a provider in the environment
    monkeypatch.setenv("HOLDPOINT_OIDC_ISSUER", "https://login.example.com")
    monkeypatch.setenv("HOLDPOINT_OIDC_CLIENT_ID", "from-env")
    monkeypatch.setenv("HOLDPOINT_OIDC_CLIENT_SECRET", "env-secret")
    monkeypatch.setenv("HOLDPOINT_OIDC_REDIRECT_URL", "https://hp.example.com/ui/oidc/callback")
    monkeypatch.setenv("HOLDPOINT_OIDC_ROLE_MAP", "hp-reviewers=reviewer, hp-audit=auditor")
    monkeypatch.setenv("HOLDPOINT_OIDC_ALLOWED_ROLES", "reviewer")

    # When the server starts with it, then with a file's [oidc] naming another client
    from_env = ServerSettings.from_env().oidc
    with_file = ServerSettings.from_env().updated(oidc={"client_id": "from-file"}).oidc

    # Then the environment's provider is used, and the file's keys win over it
    assert from_env is not None
    assert (from_env.client_id, from_env.client_secret) == ("from-env", "env-secret")
    assert from_env.role_map == {"hp-reviewers": "reviewer", "hp-audit": "auditor"}
    assert from_env.allowed_roles == ("reviewer",)
    assert with_file is not None
    assert (with_file.client_id, with_file.issuer) == ("from-file", "https://login.example.com")


def test_without_oidc_a_server_signs_in_with_api_keys_only():
    assert ServerSettings(store_url="memory://").oidc is None


def test_a_public_client_has_no_secret():
    assert oidc_settings(dict(TABLE), environ={}).client_secret is None


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"issuer": None}, "oidc.issuer is required (or the environment's HOLDPOINT_OIDC_ISSUER)"),
        ({"client_secret": "x"}, "must not be written in the file"),
        ({"client_secret_env": "NOT_SET"}, "NOT_SET is not set"),
        ({"issuer": "http://login.example.com"}, "must use https (plain http only on this"),
        ({"issuer": "login.example.com"}, "oidc.issuer must be an https:// URL"),
        ({"redirect_url": "https://hp.example.com/callback"}, "must end in /ui/oidc/callback"),
        ({"scopes": ["profile"]}, "oidc.scopes must include openid"),
        ({"scopes": "openid"}, "oidc.scopes must be a list of names"),
        ({"role_map": {"hp": 3}}, "oidc.role_map must map claim values to role names"),
        ({"secret": "x"}, "oidc: unknown setting 'secret'"),
    ],
)
def test_a_setting_that_cannot_work_is_refused_with_the_reason(change, says):
    table = {k: v for k, v in {**TABLE, **change}.items() if v is not None}

    with pytest.raises(ValueError, match="oidc") as raised:
        ServerSettings(store_url="memory://").updated(oidc=table)

    assert says in str(raised.value)


@pytest.mark.parametrize("where", ["role_map", "allowed_roles"])
def test_a_role_that_is_not_in_force_is_refused(where):
    value = {"hp": "manager"} if where == "role_map" else ["manager"]

    with pytest.raises(ValueError, match="'manager' is not a role in force") as raised:
        ServerSettings(store_url="memory://").updated(oidc={**TABLE, where: value})

    assert "reviewer" in str(raised.value)  # and the roles in force are listed


def test_a_custom_role_may_be_mapped_and_allowed():
    settings = ServerSettings(store_url="memory://").updated(
        roles={"manager": {"permissions": ["read", "queue", "decide"]}},
        oidc={**TABLE, "role_map": {"hp-leads": "manager"}, "allowed_roles": ["manager"]},
    )

    assert isinstance(settings.oidc, OidcSettings)
    assert settings.oidc.role_of("hp-leads") == "manager"


def test_the_readmes_example_is_accepted_as_written():
    # Given the [oidc] table of the README's "Sign in with OpenID Connect"
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    (example,) = re.findall(r"```toml\n(\[oidc\].*?)```", readme, re.DOTALL)
    table = tomllib.loads(example)["oidc"]

    # Then it makes the settings it says, its secret read from the variable it names
    settings = oidc_settings(table, {"HOLDPOINT_OIDC_CLIENT_SECRET": "s3cret"})
    assert settings.issuer == "https://login.example.com"
    assert settings.client_secret == "s3cret"
    assert settings.role_map == {"approvers": "reviewer"}
    assert settings.allowed_roles == ("reviewer", "auditor")
