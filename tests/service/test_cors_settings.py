"""The origins allowed to call the API from a browser page: `cors_allow_origins`.

None by default. Given in `[server]` of a holdpoint.toml (a list) or in
`HOLDPOINT_CORS_ALLOW_ORIGINS` (comma-separated), each must be an origin as a browser
sends it; anything else is refused with the reason, since it would match nothing. The
server says at start what it allows.
"""

from __future__ import annotations

import pytest
from structlog.testing import capture_logs

from api.cli.serve import SettingsError, server_settings
from api.http.app import create_app
from domain.record.store import open_store
from service.services import Services
from service.settings import ServerSettings


def test_no_origin_is_allowed_by_default():
    assert ServerSettings(store_url="memory://").cors_allow_origins == ()


def test_origins_come_from_the_environment_and_the_config_file_wins(monkeypatch):
    monkeypatch.setenv(
        "HOLDPOINT_CORS_ALLOW_ORIGINS", "https://inbox.example, http://localhost:3000"
    )
    from_env = server_settings(None, {}, {})
    assert from_env.cors_allow_origins == ("https://inbox.example", "http://localhost:3000")
    table = {"cors_allow_origins": ["https://chat.example"]}
    assert server_settings("holdpoint.toml", table, {}).cors_allow_origins == (
        "https://chat.example",
    )


@pytest.mark.parametrize(
    ("origins", "problem"),
    [
        (["https://app.example/"], "no path, not even a slash"),
        (["https://app.example/inbox"], "no path"),
        (["app.example"], "scheme://host[:port]"),
        (["ftp://app.example"], "scheme://host[:port]"),
        (["https://App.example"], "lower case"),
        (["https://app.example:http"], "Port could not be cast"),
        ([3000], "an origin is a string"),
        ("https://app.example", "must be a list of origins"),
    ],
)
def test_an_origin_a_browser_never_sends_is_refused_with_the_reason(origins, problem):
    with pytest.raises(SettingsError, match=r"in the config file holdpoint\.toml") as refused:
        server_settings("holdpoint.toml", {"cors_allow_origins": origins}, {})
    assert problem in str(refused.value)


def test_a_bad_origin_in_the_environment_names_the_variable(monkeypatch):
    monkeypatch.setenv("HOLDPOINT_CORS_ALLOW_ORIGINS", "https://app.example/")
    with pytest.raises(SettingsError, match=r"HOLDPOINT_CORS_ALLOW_ORIGINS: .*no path"):
        server_settings(None, {}, {})


@pytest.mark.parametrize(
    ("origins", "level", "allowed"),
    [
        ((), "info", "none"),
        (("https://inbox.example",), "info", ["https://inbox.example"]),
        (("*",), "warning", "any origin"),
    ],
)
def test_the_server_says_at_start_which_origins_it_allows(origins, level, allowed):
    settings = ServerSettings(store_url="memory://").updated(cors_allow_origins=origins)
    with open_store("memory://") as store:
        services = Services.build(settings, store, {})
        try:
            with capture_logs() as logs:
                create_app(services)
        finally:
            services.close()
    (line,) = [entry for entry in logs if entry["event"] == "cors"]
    assert line["log_level"] == level
    assert line["allowed"] == allowed
