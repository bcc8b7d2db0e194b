"""The server's settings: `run_workers`, `run_turn`, `max_body_bytes` and `cpu`.

Given a holdpoint.toml or flags, when a value is out of range, then it is
refused with the setting's name, and `holdpoint serve` says where the value
came from (the environment, the config file, or a flag); in range, the run
manager gets it.
"""

from __future__ import annotations

import pytest

from api.cli.serve import SettingsError, server_settings
from domain.record.store import open_store
from service.services import Services
from service.settings import ServerSettings


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("run_workers", 0, "run_workers must be 1 or more: 0"),
        ("run_turn", -0.5, "run_turn must be a number of seconds, 0 or more: -0.5"),
        ("run_turn", "fast", "run_turn must be of type float"),
        ("max_body_bytes", 0, "max_body_bytes must be 1 byte or more: 0"),
        ("max_body_bytes", -1, "max_body_bytes must be 1 byte or more: -1"),
        ("cpu", -1, "cpu must be a CPU's number, 0 or more: -1"),
        ("cpu", "0", "cpu must be a CPU's number, 0 or more: '0'"),
        ("cpu", True, "cpu must be a CPU's number, 0 or more: True"),
    ],
)
def test_a_run_setting_out_of_range_is_refused(name, value, message):
    with pytest.raises(ValueError, match=message):
        ServerSettings(store_url="memory://").updated(**{name: value})


def test_the_run_manager_gets_the_turn():
    with open_store("memory://") as store:
        settings = ServerSettings(store_url="memory://").updated(run_turn=0.5, run_workers=3)
        services = Services.build(settings, store, {})
        try:
            assert services.runs.launcher.turn == 0.5
        finally:
            services.close()


def test_by_default_a_run_waits_a_hundredth_of_a_second_before_others_go_beside_it():
    assert ServerSettings(store_url="memory://").run_turn == 0.01


def test_a_body_limit_of_one_byte_or_more_is_taken():
    assert ServerSettings(store_url="memory://").updated(max_body_bytes=1).max_body_bytes == 1


ENV = "in the environment: "
FILE = "in the config file holdpoint.toml: "
FLAG = "in the command-line flag --max-body-bytes: "
TOO_SMALL = {"--max-body-bytes": {"max_body_bytes": -5}}


@pytest.mark.parametrize(
    ("environment", "table", "flags", "where"),
    [
        ({"HOLDPOINT_RUN_RATE_LIMIT": "abc"}, {}, {}, ENV + "HOLDPOINT_RUN_RATE_LIMIT='abc'"),
        ({}, {"max_body_bytes": 0}, {}, FILE + "Server setting max_body_bytes"),
        ({}, {}, TOO_SMALL, FLAG + "Server setting max_body_bytes"),
        ({}, {"run_workers": 0}, {"--port": {"port": 9000}}, FILE + "Server setting run_workers"),
    ],
    ids=["environment", "config-file", "flag", "config-file-below-a-good-flag"],
)  # fmt: skip
def test_serve_says_where_a_bad_setting_came_from(monkeypatch, environment, table, flags, where):
    # Given a bad value in one place and good values elsewhere
    for name, value in environment.items():
        monkeypatch.setenv(name, value)

    # When the server's settings are put together
    with pytest.raises(SettingsError) as refused:
        server_settings("holdpoint.toml", table, flags)

    # Then the message starts with where the value came from, and never "in None"
    assert str(refused.value).startswith(where)
    assert "None" not in str(refused.value)


def test_flags_come_above_the_config_file_and_the_environment(monkeypatch):
    monkeypatch.setenv("HOLDPOINT_RUN_BURST", "7")
    settings = server_settings(
        None, {"max_body_bytes": 10, "port": 1}, {"--port": {"port": 2}, "--host": {"host": None}}
    )
    assert (settings.run_burst, settings.max_body_bytes, settings.port) == (7, 10, 2)
