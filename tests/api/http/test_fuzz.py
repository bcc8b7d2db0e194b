"""Every endpoint fuzzed from the OpenAPI document, with schemathesis, on a real server.

For each operation of `/openapi.json` (read from a uvicorn server on a free
port, as a client reads it), schemathesis makes requests from its parameter
and body schemas: its boundary cases (the coverage phase: each value's edges,
valid and invalid), then requests drawn at random, valid and invalid, with an
admin's key, with no key and with keys the server never made. Each answer must
keep to the document: no 500 (another 5xx only as a documented problem with
`Retry-After`), and a status, content type, headers and body that the
operation documents; a request the document calls invalid must be rejected.
Path parameters are sometimes swapped for ids that exist (a paused thread,
its interrupt, a run, a checkpoint), so the fuzzed bodies reach real threads.

A rejected request (4xx) must leave the store as it was: no event recorded
but, at most, the one `AccessRefused` that records the refusal.

The run is bounded and repeatable: a fixed number of examples per operation,
derandomized (the same requests every run), no shrinking, no example database.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import schemathesis
from eventsourcing.utils import get_topic
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.core.failures import Failure, FailureGroup
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from domain.access.identity import RefusedAttempt
from tests.api.http_harness import PUBLIC_PATHS, Server, server_on

pytestmark = pytest.mark.slow  # about 80 s a store, bounded by EXAMPLES

REFUSAL_TOPIC = get_topic(RefusedAttempt.AccessRefused)
GARBAGE_KEYS = ["hp_000000000000_" + "x" * 43, "not-a-key"]
RUN_PATH = re.compile(r"/threads/[^/]+/runs/([0-9a-f-]{36})")
# Examples per operation: enough to reach every parameter, bounded to keep `make test` short.
EXAMPLES = {"admin": 30, "invalid": 10, "anonymous": 3}


def profile(examples: int) -> settings:
    return settings(
        max_examples=examples,
        derandomize=True,
        database=None,
        deadline=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )


@dataclass
class World:
    """A server, its schema, and ids that exist on it."""

    server: Server
    schema: Any
    known: dict[str, list[str]] = field(default_factory=dict)


def paused_refund(server: Server) -> tuple[str, str, str]:
    """A refund thread paused at its interrupt: (thread id, interrupt id, run id)."""
    with server.http("agent") as agent:
        thread_id = agent.post("/threads", json={}).json()["thread_id"]
        run = agent.post(
            f"/threads/{thread_id}/runs",
            json={"assistant_id": "refund", "input": {"refund_amount": 500.0}},
        ).json()
        output = agent.get(f"/threads/{thread_id}/runs/{run['run_id']}/join").json()
    return thread_id, output["__interrupt__"][0]["id"], run["run_id"]


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def world(request, tmp_path_factory) -> Iterator[World]:
    # A short read-model wait: a fuzzed `wait_for` far ahead is answered 503 in a second.
    # No cap on requests without a valid key: each must get its own 401 here (the cap
    # has its own test in test_rate_limit.py).
    folder = tmp_path_factory.mktemp("store")
    settings = {"read_wait_timeout": 1.0, "auth_failure_rate_limit": 0}
    with server_on(request.param, folder, **settings) as server:
        schema = schemathesis.openapi.from_url(f"{server.url}/openapi.json")
        paused = [paused_refund(server) for _ in range(3)]
        with server.http("agent") as agent:
            state = agent.get(f"/threads/{paused[0][0]}/state").json()
        known = {
            "thread_id": [thread for thread, _, _ in paused],
            "interrupt_id": [interrupt for _, interrupt, _ in paused],
            "run_id": [run for _, _, run in paused],
            "checkpoint_id": [state["checkpoint_id"]],
            "assistant_id": ["refund"],
        }
        yield World(server, schema, known)


# Operations whose answer never ends of itself, which a case cannot read whole: a
# thread's stream (its parameters' refusals: tests/api/http/test_thread_stream.py)
ENDLESS = {("GET", "/threads/{thread_id}/stream")}


def operations(world: World) -> list[Any]:
    found = [result.ok() for result in world.schema.get_all_operations()]
    assert len(found) >= 30, "the OpenAPI document lists every endpoint"
    return [op for op in found if (op.method.upper(), op.path) not in ENDLESS]


def header(response: Any, name: str) -> str:
    """A header of a schemathesis response (its headers are lists)."""
    return ", ".join(response.headers.get(name, []))


def settle(server: Server, response: Any) -> None:
    """Wait for the background run a successful request started, if any."""
    run_ids = set(RUN_PATH.findall(header(response, "content-location")))
    if "application/json" in header(response, "content-type"):
        body = response.json()
        if isinstance(body, dict) and isinstance(body.get("run_id"), str):
            run_ids.add(body["run_id"])
    for run_id in run_ids:
        record = server.services.runs.local(run_id)
        if record is not None:
            assert record.wait_blocking(60), f"run {run_id} did not end"


def recorded_after(server: Server, position: int) -> list[str]:
    """The topics of the events recorded after a log position."""
    notifications = server.store.recorder.select_notifications(start=position + 1, limit=10)
    return [notification.topic for notification in notifications]


def never_500(response: Any, case: Any) -> str | None:
    """No 500 ever; another 5xx only as a documented problem with a Retry-After."""
    status = response.status_code
    if status < 500:
        return None
    documented = str(status) in case.operation.definition.raw.get("responses", {})
    retry = "retry-after" in response.headers
    if status == 500 or not documented or not retry:
        return f"{status}: {response.text_lossy()[:300]}"
    return None


Check = Callable[..., Any]
Expect = Callable[[Any], "str | None"]


def fuzz(
    world: World,
    *,
    mode: GenerationMode | None,
    headers: dict[str, str],
    checks: list[Check],
    examples: int = 0,
    expect: Expect = lambda response: None,
) -> list[str]:
    """Every operation's cases: drawn at random (`mode`), or schemathesis's boundary
    cases (`mode=None`: the coverage phase, valid and invalid). The failures, at most
    three an operation, one line each."""
    failures = []
    for operation in operations(world):
        found: list[str] = []
        if mode is None:
            for case in coverage_cases(world, operation):
                exercise(world, case, 0, headers, checks, expect, found)
        else:
            draw(world, operation, mode, examples, headers, checks, expect, found)
        failures += [f"{operation.label}: {line}" for line in found]
    with world.server.http() as anonymous:
        assert anonymous.get("/healthz").status_code == 200, "the server still answers"
    return failures


def draw(
    world: World,
    operation: Any,
    mode: GenerationMode,
    examples: int,
    headers: dict[str, str],
    checks: list[Check],
    expect: Expect,
    found: list[str],
) -> None:
    """Run `examples` requests drawn from the operation's schema in `mode`."""

    @profile(examples)
    @given(case=operation.as_strategy(generation_mode=mode), pick=st.integers(0, 3))
    def example(case: Any, pick: int) -> None:
        exercise(world, case, pick, headers, checks, expect, found)

    with contextlib.suppress(Unsatisfiable):  # nothing in this operation can be made invalid
        example()


def coverage_cases(world: World, operation: Any) -> Iterator[Any]:
    modes = [GenerationMode.POSITIVE, GenerationMode.NEGATIVE]
    config = world.schema.config.generation_for(operation=operation)
    yield from world.schema.iter_coverage_cases(
        operation, generation_modes=modes, generation_config=config
    )


def exercise(
    world: World,
    case: Any,
    pick: int,
    headers: dict[str, str],
    checks: list[Check],
    expect: Expect,
    found: list[str],
) -> None:
    """Send one case (its path ids swapped for existing ones when `pick`), check the
    answer and the store; note what is wrong in `found`."""
    server = world.server
    for name in case.path_parameters or {}:
        if pick and name in world.known:
            ids = world.known[name]
            case.path_parameters[name] = ids[(pick - 1) % len(ids)]
    before = server.head()
    response = case.call(base_url=server.url, headers=headers, timeout=60)
    problems = []
    try:
        case.validate_response(response, checks=checks, headers=headers)
    except (Failure, FailureGroup) as failure:
        problems.append(" | ".join(str(failure).strip().splitlines()[:6]))
    problems += [m for m in (never_500(response, case), expect(response)) if m]
    if 200 <= response.status_code < 300:
        settle(server, response)
    elif 400 <= response.status_code < 500:
        topics = recorded_after(server, before)
        if len(topics) > 1 or any(topic != REFUSAL_TOPIC for topic in topics):
            problems.append(f"a {response.status_code} recorded {topics}")
    for problem in problems[: max(0, 3 - len(found))]:
        request = f"{case.method} {case.formatted_path} {case.query or ''} {case.body!r:.200}"
        found.append(f"{request} -> {response.status_code}: {problem}")


CONFORMANCE = [
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]


def test_boundary_requests_with_an_admin_key_keep_to_the_schema(world):
    # Given a server with threads, an interrupt and a run, and an admin's key
    headers = {"x-api-key": world.server.keys["admin"]}
    # When every operation gets schemathesis's boundary cases, valid and invalid
    failures = fuzz(
        world, mode=None, headers=headers, checks=[*CONFORMANCE, negative_data_rejection]
    )
    # Then no answer is a 500 or contradicts the document, every invalid one is rejected,
    # and no rejected request recorded an event
    assert not failures, "\n".join(failures)


def test_random_requests_with_an_admin_key_keep_to_the_schema(world):
    # Given an admin's key
    headers = {"x-api-key": world.server.keys["admin"]}
    # When every operation gets requests drawn at random from its schema
    failures = fuzz(
        world,
        mode=GenerationMode.POSITIVE,
        headers=headers,
        examples=EXAMPLES["admin"],
        checks=CONFORMANCE,
    )
    # Then no answer is a 500 or contradicts the document, and no 4xx recorded an event
    assert not failures, "\n".join(failures)


def test_random_invalid_requests_are_rejected_and_record_nothing(world):
    # Given an admin's key
    headers = {"x-api-key": world.server.keys["admin"]}
    # When every operation gets requests that break its schema
    failures = fuzz(
        world,
        mode=GenerationMode.NEGATIVE,
        headers=headers,
        examples=EXAMPLES["invalid"],
        checks=[*CONFORMANCE, negative_data_rejection],
    )
    # Then each is rejected with a documented 4xx, recording nothing
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("key", [None, *GARBAGE_KEYS], ids=["no-key", "unknown-key", "garbage"])
def test_without_a_valid_key_every_endpoint_answers_401_and_records_only_the_refusal(world, key):
    # Given no key, or one the server never made
    headers = {} if key is None else {"x-api-key": key}
    public = PUBLIC_PATHS

    def refused(response: Any) -> str | None:
        if str(response.request.path_url).split("?")[0] in public:
            return None
        problem = "problem+json" in header(response, "content-type")
        if response.status_code in (400, 401, 413, 422) and problem:
            return None
        return f"answered {response.status_code} without a valid key"

    # When every operation is called
    failures = fuzz(
        world,
        mode=GenerationMode.POSITIVE,
        headers=headers,
        examples=EXAMPLES["anonymous"],
        checks=CONFORMANCE,
        expect=refused,
    )
    # Then each is refused (or rejected as malformed before the key is read)
    assert not failures, "\n".join(failures)
