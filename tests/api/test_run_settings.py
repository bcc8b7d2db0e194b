"""The server's settings for running graph code: `run_workers` and `run_turn`.

Given a holdpoint.toml or flags, when a value is out of range, then it is
refused with the setting's name; in range, the run manager gets it.
"""

from __future__ import annotations

import pytest

from api.services import Services
from api.settings import ServerSettings
from domain.store import open_store


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("run_workers", 0, "run_workers must be 1 or more: 0"),
        ("run_turn", -0.5, "run_turn must be a number of seconds, 0 or more: -0.5"),
        ("run_turn", "fast", "run_turn must be of type float"),
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
