"""The same SDK calls against LangGraph's own server (`langgraph dev`, langgraph-api
0.16.7, from bench/langgraph-server.txt) and against Holdpoint, both serving the same
LangGraph graph (bench/graphs.py's refund graph), compared field by field once ids and
times are normalized. Every way they differ is in `DIFFERENCES`, in one place, each with
why; anything else that differs fails the test.

LangGraph's server runs in an environment of its own (`.venv-langgraph`, which `make
bench` and `.ci/run` create): without it this test skips, except in CI, where it fails."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt
from langgraph_sdk import get_sync_client

from bench.backends import LANGGRAPH_VENV
from bench.graphs import Api, refund_builder
from bench.http import REFUND_INPUT, langgraph_server
from service.langgraph_app import LangGraphApp
from tests.api.http_harness import running_server
from tests.ci import missing

# Keys one side has and the other has not, and why (README, "Where it differs from
# LangGraph's server", has each).
DIFFERENCES: dict[str, dict[str, str]] = {
    "thread": {
        "error": "Holdpoint's thread says its error (null) from its creation on",
        "interrupts": "Holdpoint's thread lists its interrupts ({}) from its creation on",
    },
    "checkpoint metadata": {
        "created_by": "LangGraph's server's own bookkeeping",
        "run_attempt": "Holdpoint counts a run's attempts on the run (`attempt`)",
        "langgraph_version": "the server's build, not the record's",
        "langgraph_api_version": "the server's build, not the record's",
        "langgraph_plan": "LangGraph's licensing",
        "langgraph_host": "LangGraph's deployment",
        "langgraph_api_url": "LangGraph's deployment",
        "langgraph_auth_user_id": "Holdpoint's `user_id` is the key's principal",
        "langgraph_request_id": "Holdpoint's request ids are in its request log",
    },
    "run": {
        "attempt": "Holdpoint's runs survive crashes: the attempt that ran it",
        "taken_over": "Holdpoint's runs survive crashes: who took it over, when",
    },
    "assistant's thread": {
        "config": "LangGraph's server copies the assistant's config onto the thread; "
        "Holdpoint's thread records the assistant's id and version, whose event holds it",
        "assistant_version": "that version, in the thread's metadata",
    },
    # Fields both have, with values of each server's own
    "cron values": {
        "payload": "what each server keeps of the request (LangGraph's adds the schedule, "
        "the assistant and a configurable cron_id)",
        "user_id": "Holdpoint's is the key's principal (LangGraph's `langgraph dev`: none)",
    },
    "run values": {
        "kwargs": "each server's own record of the request (LangGraph's holds its config)",
        "metadata": "LangGraph's adds `created_by`; both have graph_id and assistant_id",
        "multitask_strategy": "a run that names none: Holdpoint's default is `reject` (409 "
        "while another run holds the thread), LangGraph's is `enqueue`",
    },
}
# /info and /ok: what each server says of itself
SELF_DESCRIPTION = {
    "version": "each server's own version",
    "flags": "each server's own features (Holdpoint: no LangSmith tracing)",
    "host": "`kind`: holdpoint, not self-hosted LangGraph",
    "services": "Holdpoint names its database (skipped unless check_db=1); LangGraph's "
    "in-memory runtime has none",
}
# The same value differs by who asks: LangGraph's `langgraph dev` has no authentication.
USER_ID = "user_id"
ID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$|^[0-9a-f]{32}$")
TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d")


@pytest.fixture(scope="module")
def both(tmp_path_factory) -> tuple[dict[str, Any], dict[str, Any]]:
    if not (LANGGRAPH_VENV / "bin" / "langgraph").exists():
        missing(
            "the differential test against LangGraph's server",
            f"no {LANGGRAPH_VENV}: `make {LANGGRAPH_VENV.name}/.installed` creates it",
        )
    folder: Path = tmp_path_factory.mktemp("servers")
    with langgraph_server(folder) as langgraph:
        client = get_sync_client(url=langgraph.url)
        theirs = calls(client, client)
    graph = refund_builder(Api(StateGraph, START, END, interrupt, Command)).compile()
    url = f"sqlite:///{folder / 'holdpoint.db'}"
    served = {"extra": lambda store: {"refund": LangGraphApp(graph, "refund", store)}}
    with running_server(url, **served) as holdpoint:
        ours = calls(holdpoint.sdk("agent"), holdpoint.sdk("reviewer"))
    return theirs, ours


def calls(agent: Any, reviewer: Any) -> dict[str, Any]:
    """The refund story through the SDK: what each call answered."""
    seen: dict[str, Any] = {"assistants": agent.assistants.search(graph_id="refund")}
    created = agent.threads.create()
    thread_id = created["thread_id"]
    seen["created"] = created
    seen["paused"] = agent.runs.wait(thread_id, "refund", input=REFUND_INPUT)
    seen["thread"] = agent.threads.get(thread_id)
    seen["state"] = agent.threads.get_state(thread_id)
    resumed = reviewer.runs.stream(
        thread_id, "refund", command={"resume": True}, stream_mode=["values", "updates"]
    )
    seen["resumed"] = [[part.event, part.data] for part in resumed]
    seen["final"] = agent.threads.get_state(thread_id)
    seen["history"] = agent.threads.get_history(thread_id)
    seen["runs"] = agent.runs.list(thread_id)
    seen["graph"] = agent.assistants.get_graph("refund")
    # LangGraph's server takes only the assistant's id here (Holdpoint its name too)
    seen["versions"] = agent.assistants.get_versions(seen["assistants"][0]["assistant_id"])
    seen["updated"] = agent.threads.update(thread_id, metadata={"ticket": "T-1"})
    seen["count"] = agent.threads.count(metadata={"ticket": "T-1"})
    seen["sorted"] = agent.threads.search(sort_by="updated_at", sort_order="desc", limit=2)
    store = agent.store
    store.put_item(["users", "u-1"], "prefs", {"theme": "dark"})
    seen["item"] = store.get_item(["users", "u-1"], "prefs")
    seen["items"] = store.search_items(["users"], filter={"theme": "dark"})
    seen["namespaces"] = store.list_namespaces(prefix=["users"])
    store.delete_item(["users", "u-1"], "prefs")
    seen["items deleted"] = store.search_items(["users"])
    cron = agent.crons.create_for_thread(thread_id, "refund", schedule="0 9 * * *", input={})
    seen["cron"], seen["crons"] = cron, agent.crons.search(thread_id=thread_id)
    seen["cron count"] = agent.crons.count(thread_id=thread_id)
    agent.crons.delete(cron["cron_id"])
    seen["crons deleted"] = agent.crons.search(thread_id=thread_id)
    seen.update(assistant_calls(agent))
    http = agent.http.client
    seen["info"] = http.get("/info").json()
    seen["ok"] = http.get("/ok").json()
    return seen


def assistant_calls(agent: Any) -> dict[str, Any]:
    """An assistant made, changed, set back, run, searched and deleted."""
    made = agent.assistants.create(
        "refund", context={"tier": "gold"}, metadata={"team": "ops"}, name="Gold desk"
    )
    mine = made["assistant_id"]
    seen = {"assistant made": made}
    seen["assistant updated"] = agent.assistants.update(mine, metadata={"floor": 2})
    seen["assistant versions"] = agent.assistants.get_versions(mine)
    seen["assistant latest"] = agent.assistants.set_latest(mine, 1)
    thread_id = agent.threads.create()["thread_id"]
    seen["assistant run"] = agent.runs.wait(thread_id, mine, input=REFUND_INPUT)
    seen["assistant thread"] = agent.threads.get(thread_id)
    seen["assistants named"] = agent.assistants.search(name="gold")
    seen["assistant count"] = agent.assistants.count(graph_id="refund")
    agent.assistants.delete(mine)
    seen["assistants left"] = agent.assistants.search(graph_id="refund")
    return seen


def normalized(value: Any, names: dict[str, str] | None = None) -> Any:
    """Ids as the order they first appear in, keys taken in sorted order (`<id 1>`...),
    times as `<time>`: what is left is what a client would see differ."""
    names = {} if names is None else names
    if isinstance(value, dict):
        return {
            normalized(key, names): normalized(item, names)
            for key, item in sorted(value.items(), key=lambda pair: str(pair[0]))
        }
    if isinstance(value, list):
        return [normalized(item, names) for item in value]
    if isinstance(value, str) and ID.match(value):
        return names.setdefault(value, f"<id {len(names) + 1}>")
    if isinstance(value, str) and TIME.match(value):
        return "<time>"
    return value


def without_metadata(state: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in state.items() if key != "metadata"}


def without(value: dict[str, Any], kind: str, *also: str) -> dict[str, Any]:
    return {k: v for k, v in value.items() if k not in DIFFERENCES[kind] and k not in also}


def test_assistants_and_a_new_thread_are_the_same(both):
    theirs, ours = both
    assert normalized(ours["assistants"]) == normalized(theirs["assistants"])
    assert set(ours["created"]) - set(theirs["created"]) == set(DIFFERENCES["thread"])
    assert normalized(without(ours["created"], "thread")) == normalized(theirs["created"])


def test_a_run_to_an_interrupt_answers_the_same(both):
    theirs, ours = both
    assert normalized(ours["paused"]) == normalized(theirs["paused"])
    assert normalized(ours["thread"]) == normalized(theirs["thread"])


def test_state_history_and_stream_are_the_same_but_for_the_listed_metadata(both):
    theirs, ours = both
    for key in ("state", "final"):
        mine, their = ours[key], theirs[key]
        assert normalized(without_metadata(mine)) == normalized(without_metadata(their))
        only_theirs = set(their["metadata"]) - set(mine["metadata"])
        assert only_theirs == set(DIFFERENCES["checkpoint metadata"])
        shared = set(mine["metadata"]) - {USER_ID}
        assert shared <= set(their["metadata"])
        assert normalized({k: mine["metadata"][k] for k in sorted(shared)}) == normalized(
            {k: their["metadata"][k] for k in sorted(shared)}
        )
    assert normalized(ours["resumed"]) == normalized(theirs["resumed"])
    assert len(ours["history"]) == len(theirs["history"])
    for mine, their in zip(ours["history"], theirs["history"], strict=True):
        assert normalized(mine["values"]) == normalized(their["values"])
        assert mine["next"] == their["next"]
        assert (mine["metadata"]["source"], mine["metadata"]["step"]) == (
            their["metadata"]["source"],
            their["metadata"]["step"],
        )


def test_runs_are_listed_the_same_but_for_the_listed_fields(both):
    theirs, ours = both
    assert len(ours["runs"]) == len(theirs["runs"])
    for mine, their in zip(ours["runs"], theirs["runs"], strict=True):
        assert set(mine) - set(their) == set(DIFFERENCES["run"])
        assert set(their) <= set(mine)
        values = DIFFERENCES["run values"]
        assert normalized(without(mine, "run", *values)) == normalized(
            without(their, "run", *values)
        )
        assert {k: mine["metadata"][k] for k in ("graph_id", "assistant_id")} == {
            k: their["metadata"][k] for k in ("graph_id", "assistant_id")
        }


def test_a_graph_drawing_an_update_a_count_and_a_sorted_search_are_the_same(both):
    theirs, ours = both
    assert ours["graph"] == theirs["graph"]
    assert normalized(ours["versions"]) == normalized(theirs["versions"])
    assert normalized(ours["updated"]) == normalized(theirs["updated"])
    assert ours["count"] == theirs["count"] == 1
    assert normalized(ours["sorted"]) == normalized(theirs["sorted"])


def test_info_and_ok_have_the_same_shape(both):
    theirs, ours = both
    for answer in ("info", "ok"):
        mine, their = ours[answer], theirs[answer]
        assert set(mine) == set(their)
        same = [key for key in their if key not in SELF_DESCRIPTION]
        assert {k: mine[k] for k in same} == {k: their[k] for k in same}
        for key in set(their) & set(SELF_DESCRIPTION):  # other values, the same shape
            if isinstance(their[key], dict) and their[key]:
                assert set(mine[key]) == set(their[key])


def test_the_memory_store_answers_the_same(both):
    theirs, ours = both
    for answer in ("item", "items", "namespaces", "items deleted"):
        assert normalized(ours[answer]) == normalized(theirs[answer]), answer


def test_crons_answer_the_same_but_for_the_listed_values(both):
    theirs, ours = both
    values = DIFFERENCES["cron values"]
    for mine, their in [
        (ours["cron"], theirs["cron"]),
        *zip(ours["crons"], theirs["crons"], strict=True),
    ]:
        assert set(mine) == set(their)
        assert normalized(without(mine, "cron values")) == normalized(without(their, "cron values"))
        assert set(values) <= set(mine)
    assert ours["cron count"] == theirs["cron count"] == 1
    assert ours["crons deleted"] == theirs["crons deleted"] == []


def test_assistants_made_changed_run_and_deleted_answer_the_same(both):
    theirs, ours = both
    for answer in (
        "assistant made",
        "assistant updated",
        "assistant versions",
        "assistant latest",
        "assistant run",
        "assistants named",
        "assistant count",
        "assistants left",
    ):
        assert normalized(ours[answer]) == normalized(theirs[answer]), answer
    mine, their = ours["assistant thread"], theirs["assistant thread"]
    differences = DIFFERENCES["assistant's thread"]
    assert mine["metadata"].pop("assistant_version") == 1
    assert normalized(mine["metadata"]) == normalized(their["metadata"])
    assert their["config"] == {"configurable": {"tier": "gold"}}
    assert normalized(without(mine, "thread", *differences)) == normalized(
        without(their, "thread", *differences)
    )
