"""A run's `context` over HTTP reaches its nodes' runtime, made the graph's context_schema:
given a served graph with a schema, when a run sends a context, then what the node saw."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, TypedDict

import pytest
from fastapi.testclient import TestClient

from api.http.app import create_app
from domain.graph import END, START, StateGraph
from domain.record.store import open_store
from domain.runtime import Runtime
from service.services import Services
from service.settings import ServerSettings


@dataclass
class Context:
    user_id: str


class State(TypedDict, total=False):
    greeting: str


def greet(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    return {"greeting": f"Hello {runtime.context.user_id}"}


@pytest.fixture(scope="module")
def client() -> Iterator[tuple[TestClient, str]]:
    store = open_store("memory://")
    builder = StateGraph(State, context_schema=Context)
    builder.add_node("greet", greet)
    builder.add_edge(START, "greet")
    builder.add_edge("greet", END)
    graphs = {"greeter": builder.compile(checkpointer=store, name="greeter")}
    services = Services.build(ServerSettings(store_url="memory://"), store, graphs)
    key = services.keyring.create("amy", "agent")[1]
    with TestClient(create_app(services)) as made:
        yield made, key


def run(client: tuple[TestClient, str], context: Any) -> Any:
    made, key = client
    headers = {"x-api-key": key}
    thread_id = made.post("/threads", json={}, headers=headers).json()["thread_id"]
    body = {"assistant_id": "greeter", "input": {}, "context": context}
    return made.post(f"/threads/{thread_id}/runs/wait", json=body, headers=headers)


def test_a_runs_context_is_its_nodes_runtime_context(client):
    answered = run(client, {"user_id": "amy"})

    assert answered.status_code == 200
    assert answered.json() == {"greeting": "Hello amy"}


def test_a_context_that_does_not_fit_the_schema_is_a_422(client):
    refused = run(client, {"user": "amy"})

    assert refused.status_code == 422
    assert "Invalid body.context" in refused.json()["detail"]
