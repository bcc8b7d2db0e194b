"""Assistants, one per served graph: searched, sorted, selected and counted through the
SDK as LangGraph's server answers."""

from __future__ import annotations

import pytest

from tests.api.http_harness import running_server


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("store")
    with running_server(f"sqlite:///{folder / 'holdpoint.db'}") as running:
        yield running


def test_assistants_are_sorted_as_asked_and_paged(server):
    agent = server.sdk("agent")
    names = sorted(server.services.graphs)
    everyone = agent.assistants.search(limit=1000)
    assert [a["graph_id"] for a in everyone] == names
    descending = agent.assistants.search(limit=1000, sort_by="name", sort_order="desc")
    assert [a["name"] for a in descending] == names[::-1]
    second = agent.assistants.search(limit=1, offset=1, sort_by="assistant_id")
    assert second == sorted(everyone, key=lambda a: a["assistant_id"])[1:2]


def test_select_answers_with_the_fields_asked_for_and_count_counts(server):
    agent = server.sdk("agent")
    picked = agent.assistants.search(graph_id="refund", select=["graph_id", "version"])
    assert picked == [{"graph_id": "refund", "version": 1}]
    assert agent.assistants.count() == len(server.services.graphs)
    assert agent.assistants.count(graph_id="refund") == 1
    assert agent.assistants.count(graph_id="no-such-graph") == 0
    with server.http("agent") as http:
        assert http.post("/assistants/search", json={"select": ["secret"]}).status_code == 422
        assert http.post("/assistants/search", json={"sort_by": "size"}).status_code == 422
