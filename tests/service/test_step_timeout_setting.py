"""The server's `step_timeout`: a default time limit for the nodes of served graphs.

A graph that sets its own `step_timeout` keeps it; the others get the
server's. A value that is not a positive number of seconds is refused.
"""

from __future__ import annotations

import pytest

from domain.record.store import open_store
from service.services import Services
from service.settings import ServerSettings
from tests.api.http_graphs import served_test_graphs


def test_graphs_without_a_step_timeout_get_the_servers():
    with open_store("memory://") as store:
        graphs = served_test_graphs(store)
        own, *others = graphs.values()
        own.step_timeout = 3.0
        settings = ServerSettings(store_url="memory://").updated(step_timeout=30)

        services = Services.build(settings, store, graphs)
        try:
            assert own.step_timeout == 3.0
            assert all(graph.step_timeout == 30 for graph in others)
        finally:
            services.close()


@pytest.mark.parametrize("value", [0, -1, "30", True])
def test_a_step_timeout_that_is_not_a_positive_number_is_refused(value):
    with pytest.raises(ValueError, match="step_timeout must be a number of seconds above 0"):
        ServerSettings(store_url="memory://").updated(step_timeout=value)
