"""The oversight and audit endpoints document their answers: typed in the OpenAPI
document (and each answer checked against it by tests/api/http/test_fuzz.py)."""

from __future__ import annotations

import pytest

from api.http.app import create_app
from domain.record.store import open_store
from service.graph_loader import load_graphs
from service.services import Services
from service.settings import ServerSettings

TYPED = {
    ("get", "/approvals"): "ApprovalsPage",
    ("post", "/approvals/{interrupt_id}/decision"): "Decision",
    ("post", "/approvals/{interrupt_id}/assign"): "Assignment",
    ("post", "/threads/{thread_id}/cancel"): "Cancellation",
    ("get", "/threads/{thread_id}/events"): "RecordedEvents",
    ("get", "/threads/{thread_id}/audit"): "Timeline",
    ("get", "/audit/refusals"): "RefusalsPage",
    ("get", "/audit/verify"): "Verification",
}


@pytest.fixture(scope="module")
def document():
    with open_store("memory://") as store:
        services = Services.build(
            ServerSettings(store_url="memory://"), store, load_graphs([], store)
        )
        try:
            yield create_app(services).openapi()
        finally:
            services.close()


@pytest.mark.parametrize(("operation", "model"), TYPED.items(), ids=str)
def test_the_answer_of_each_oversight_and_audit_endpoint_is_typed(document, operation, model):
    method, path = operation
    answer = document["paths"][path][method]["responses"]["200"]["content"]["application/json"]
    assert answer["schema"] == {"$ref": f"#/components/schemas/{model}"}
    assert document["components"]["schemas"][model]["properties"]


def test_a_decision_says_whether_it_resumed_and_its_approvals(document):
    properties = document["components"]["schemas"]["Decision"]["properties"]
    assert {"payload_digest", "approvals", "resumed", "decided_by", "run_id"} <= set(properties)
