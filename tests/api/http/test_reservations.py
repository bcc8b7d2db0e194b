"""`POST /threads` without a graph reserves the thread in the store: a limit per
principal, refused as a problem (never by forgetting an older reservation)."""

from __future__ import annotations

import pytest

from tests.api.http_harness import server_on

LIMIT = 2


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def server(request, tmp_path_factory):
    with server_on(request.param, tmp_path_factory.mktemp("store")) as running:
        running.services.reservations.limit = LIMIT
        yield running


def test_a_principal_over_the_reservation_limit_gets_a_429_and_keeps_its_threads(server):
    # Given an agent holding as many reserved threads as the server allows
    with server.http("agent") as agent, server.http("agent2") as other:
        held = [agent.post("/threads", json={}).json()["thread_id"] for _ in range(LIMIT)]

        # When it reserves one more
        answer = agent.post("/threads", json={"metadata": {"case": "one too many"}})

        # Then it is refused with a problem that says what to do instead
        assert answer.status_code == 429, answer.text
        assert answer.headers["content-type"] == "application/problem+json"
        problem = answer.json()
        assert problem["type"].endswith("/too-many-reservations")
        assert "'agent' already holds 2 reserved threads that never ran" in problem["detail"]
        assert "metadata.graph_id" in problem["detail"]
        # And the threads it holds are all still there
        assert [agent.get(f"/threads/{t}").status_code for t in held] == [200, 200]
        # And a thread with its graph is recorded at once, as another principal may reserve
        recorded = agent.post("/threads", json={"metadata": {"graph_id": "refund"}})
        assert recorded.status_code == 200, recorded.text
        assert other.post("/threads", json={}).status_code == 200
