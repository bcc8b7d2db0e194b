"""LangGraph's long-term memory store over HTTP, driven by the official SDK
(`client.store`): put, get, search (namespace prefix and filter), list namespaces and
delete, as LangGraph's server answers them; every write recorded with its actor, and an
item's history for auditors; what Holdpoint does not offer (vector search, TTLs) a 422."""

from __future__ import annotations

import pytest
from langgraph_sdk.errors import NotFoundError, UnprocessableEntityError

from tests.api.http_harness import running_server


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("store")
    with running_server(f"sqlite:///{folder / 'holdpoint.db'}") as running:
        yield running


@pytest.fixture(scope="module")
def filled(server):
    """Items under two users and a team, written by the agent."""
    store = server.sdk("agent").store
    store.put_item(["users", "u-1", "notes"], "n1", {"kind": "note", "stars": 5})
    store.put_item(["users", "u-1", "notes"], "n2", {"kind": "todo", "stars": 2})
    store.put_item(["users", "u-2", "notes"], "n1", {"kind": "note", "stars": 3})
    store.put_item(["teams", "t-1"], "charter", {"kind": "doc"})
    return server


def test_an_item_put_is_got_back_as_langgraphs_server_answers_it(server):
    agent = server.sdk("agent")
    agent.store.put_item(["profiles", "u-9"], "prefs", {"theme": "dark"})
    item = server.sdk("reviewer").store.get_item(["profiles", "u-9"], "prefs")
    assert item["namespace"] == ["profiles", "u-9"]
    assert (item["key"], item["value"]) == ("prefs", {"theme": "dark"})
    assert item["created_at"].endswith("Z")
    assert item["updated_at"] >= item["created_at"]


def test_search_finds_items_under_a_prefix_by_their_values(filled):
    store = filled.sdk("auditor").store
    found = store.search_items(["users"], filter={"kind": "note"}, limit=10)
    assert sorted((i["namespace"][1], i["key"]) for i in found["items"]) == [
        ("u-1", "n1"),
        ("u-2", "n1"),
    ]
    assert {i["score"] for i in found["items"]} == {None}
    stars = store.search_items(["users", "u-1"], filter={"stars": {"$gte": 3}})
    assert [i["key"] for i in stars["items"]] == ["n1"]
    paged = store.search_items(["users"], limit=1, offset=1)
    assert len(paged["items"]) == 1
    # A prefix is whole labels: "user" is not a prefix of "users"
    assert store.search_items(["user"])["items"] == []


def test_namespaces_are_listed_by_prefix_suffix_and_depth(filled):
    store = filled.sdk("reviewer").store
    listed = store.list_namespaces(prefix=["users"])["namespaces"]
    assert listed == [["users", "u-1", "notes"], ["users", "u-2", "notes"]]
    assert store.list_namespaces(prefix=["users"], max_depth=2)["namespaces"] == [
        ["users", "u-1"],
        ["users", "u-2"],
    ]
    assert store.list_namespaces(suffix=["t-1"])["namespaces"] == [["teams", "t-1"]]


def test_a_deleted_item_is_gone_from_reads_and_its_history_tells_who_did_what(server):
    agent, admin = server.sdk("agent").store, server.sdk("admin").store
    agent.put_item(["cases", "c-1"], "summary", {"text": "draft"})
    admin.put_item(["cases", "c-1"], "summary", {"text": "final"})
    admin.delete_item(["cases", "c-1"], "summary")
    with pytest.raises(NotFoundError):
        agent.get_item(["cases", "c-1"], "summary")
    assert agent.search_items(["cases"])["items"] == []
    with server.http("auditor") as http:
        history = http.get(
            "/store/items/history", params={"namespace": "cases.c-1", "key": "summary"}
        ).json()
    assert [(c["kind"], c["actor"]["id"], c["value"]) for c in history["changes"]] == [
        ("stored", "agent", {"text": "draft"}),
        ("changed", "admin", {"text": "final"}),
        ("deleted", "admin", None),
    ]


def test_only_agents_and_admins_write_and_only_auditors_read_the_history(server):
    head = server.head()
    with server.http("reviewer") as http:
        put = http.put("/store/items", json={"namespace": ["a"], "key": "k", "value": {}})
        assert put.status_code == 403
        history = http.get("/store/items/history", params={"namespace": "a", "key": "k"})
        assert history.status_code == 403
    topics = [n.topic for n in server.store.recorder.select_notifications(head + 1, 100)]
    assert all("AccessRefused" in topic for topic in topics)


@pytest.mark.parametrize(
    ("path", "body", "says"),
    [
        ("/store/items/search", {"query": "similar to this"}, "vector index"),
        ("/store/items", {"namespace": ["a"], "key": "k", "value": {}, "ttl": 5}, "policy"),
        ("/store/items", {"namespace": ["a"], "key": "k", "value": {}, "index": ["x"]}, "index"),
        ("/store/items", {"namespace": ["a.b"], "key": "k", "value": {}}, "'.'"),
        ("/store/items", {"namespace": ["a"], "key": "k", "value": [1]}, "value"),
        ("/store/items/search", {"filter": {"n": {"$regex": "x"}}}, "$regex"),
    ],
)
def test_what_the_store_does_not_offer_is_a_422_recording_nothing(server, path, body, says):
    head = server.head()
    with server.http("admin") as http:
        answer = http.request("POST" if path.endswith("search") else "PUT", path, json=body)
    assert answer.status_code == 422, answer.text
    assert says in answer.json()["detail"]
    assert server.head() == head


def test_the_sdks_own_checks_and_an_unknown_item_answer_as_langgraphs_server(server):
    agent = server.sdk("agent")
    with pytest.raises(ValueError, match="periods"):
        agent.store.put_item(["a.b"], "k", {})
    with pytest.raises(NotFoundError):
        agent.store.get_item(["nobody"], "nothing")
    with pytest.raises(UnprocessableEntityError):
        agent.store.search_items(["users"], query="semantic")
    # Deleting what is not there is no error, and records nothing
    head = server.head()
    agent.store.delete_item(["nobody"], "nothing")
    assert server.head() == head


def test_a_write_answers_its_log_position(server):
    with server.http("agent") as http:
        put = http.put("/store/items", json={"namespace": ["p"], "key": "k", "value": {"v": 1}})
    assert put.status_code == 204
    assert int(put.headers["x-holdpoint-position"]) == server.head()
