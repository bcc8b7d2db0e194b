"""Hostile input: each request gets a clear 4xx or is stored and shown as sent.

Huge bodies, JSON nested 100,000 deep, huge strings in `interrupt()` values and
resumes, Unicode edge cases, NUL and lone surrogates, thread ids with path
separators or control characters. After every hostile request the store is as
it was (unless the input was accepted) and `/healthz` still answers.
"""

from __future__ import annotations

import json
from urllib.parse import quote

import httpx
import pytest

from api.http.input_limits import is_json
from domain.record.json_limits import MAX_JSON_DEPTH
from tests.api.http_harness import Server, server_on

LIMIT = 256 * 1024  # the server's largest body in these tests
JSON = {"content-type": "application/json"}


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def server(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp("store")
    with server_on(request.param, folder, max_body_bytes=LIMIT) as running:
        yield running


@pytest.fixture
def agent(server):
    with server.http("agent") as client:
        yield client


@pytest.fixture
def reviewer(server):
    with server.http("reviewer") as client:
        yield client


def assert_alive(server: Server) -> None:
    with server.http() as anonymous:
        assert anonymous.get("/healthz").json() == {"status": "ok"}


def assert_problem(response: httpx.Response, status: int, *fragments: str) -> dict:
    assert response.status_code == status, response.text[:500]
    assert response.headers["content-type"] == "application/problem+json"
    problem = response.json()
    for fragment in fragments:
        assert fragment in problem["detail"], problem["detail"]
    return problem


def rejected(server: Server, send, status: int, *fragments: str) -> dict:
    """Send a hostile request: a problem with `status`, nothing recorded, the server up."""
    head = server.head()
    problem = assert_problem(send(), status, *fragments)
    assert server.head() == head
    assert_alive(server)
    return problem


def fill(template: str, value: str) -> str:
    """JSON text from a template: `@` replaced by raw JSON text."""
    return template.replace("@", value)


def nested(depth: int, inner: str = "1") -> str:
    """JSON text of `depth` nested arrays around `inner`."""
    return "[" * depth + inner + "]" * depth


def echo_paused(agent: httpx.Client, payload, **extra) -> tuple[str, str]:
    """An echo thread paused at an interrupt that shows `payload`: (thread, interrupt)."""
    thread_id = agent.post("/threads", json={}).json()["thread_id"]
    output = agent.post(
        f"/threads/{thread_id}/runs/wait",
        json={"assistant_id": "echo", "input": {"payload": payload, **extra}},
    )
    assert output.status_code == 200, output.text[:500]
    return thread_id, output.json()["__interrupt__"][0]["id"]


# -- huge payloads ----------------------------------------------------------


def test_a_body_over_the_limit_is_a_413_however_it_is_sent(server, agent):
    ten_megabytes = b'{"metadata": {"blob": "' + b"x" * 10_000_000 + b'"}}'

    def chunks():
        for start in range(0, len(ten_megabytes), 65536):
            yield ten_megabytes[start : start + 65536]

    # Given a body of 10 MB, over the 256 KiB limit
    # When it is sent with a Content-Length, then in chunks
    # Then each is a 413 naming the limit, nothing is recorded, and the server answers
    rejected(server, lambda: agent.post("/threads", content=ten_megabytes, headers=JSON), 413)
    rejected(
        server, lambda: agent.post("/threads", content=chunks(), headers=JSON), 413, str(LIMIT)
    )


def test_a_client_still_sending_an_oversized_body_reads_the_413_not_a_reset(server, agent):
    # Given a body a few times over the limit, sent whole with its Content-Length
    body = b'{"metadata": {"blob": "' + b"y" * (16 * LIMIT) + b'"}}'
    # When it is sent again and again on one connection
    statuses = [agent.post("/threads", content=body, headers=JSON).status_code for _ in range(20)]
    # Then every attempt reads its 413: the server took the rest of the body before answering
    assert statuses == [413] * 20


def test_huge_strings_below_the_limit_are_stored_and_read_back_intact(server, agent, reviewer):
    # Given an interrupt() value and a resume just under the body limit, not all ASCII
    text = ("Ünïcødé ✓ 😀 " * 20_000)[: LIMIT // 2 - 1000]
    thread_id, interrupt_id = echo_paused(agent, text)
    answer = ("réponse ⟨ok⟩ " * 20_000)[: LIMIT // 2 - 1000]
    # When a reviewer answers with the huge resume
    decided = reviewer.post(
        f"/approvals/{interrupt_id}/decision", json={"decision": "edit", "resume": answer}
    )
    assert decided.status_code == 200, decided.text[:300]
    agent.get(f"/threads/{thread_id}/runs/{decided.json()['run_id']}/join")
    # Then both are recorded and read back exactly, in the state and in the events
    state = agent.get(f"/threads/{thread_id}/state").json()
    assert state["values"] == {"payload": text, "answer": answer}
    with server.http("auditor") as auditor:
        events = auditor.get(f"/threads/{thread_id}/events").json()["events"]
    raised = next(e for e in events if e["type"].endswith("InterruptRaised"))
    resumed = next(e for e in events if e["type"].endswith("InterruptResumed"))
    assert raised["data"]["value"] == text
    assert resumed["data"]["resume"] == answer


# -- deep nesting -------------------------------------------------------------


@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH + 1, 1_000, 100_000])
def test_json_nested_too_deep_is_a_422_before_anything_reads_it(server, agent, reviewer, depth):
    thread_id, interrupt_id = echo_paused(agent, "q")
    run = fill('{"assistant_id": "echo", "input": {"payload": @}}', nested(depth))
    decision = fill('{"decision": "edit", "resume": @}', nested(depth))
    metadata = fill('{"metadata": {"x": @}}', nested(depth))
    # Given bodies whose JSON nests `depth` arrays deep
    # When they are sent as a run's input, a decision's resume and a thread's metadata
    # Then each is a 422 naming the limit, nothing is recorded, and the server answers
    for path, client, body in [
        (f"/threads/{thread_id}/runs/wait", agent, run),
        (f"/approvals/{interrupt_id}/decision", reviewer, decision),
        ("/threads", agent, metadata),
    ]:
        problem = rejected(
            server,
            lambda path=path, client=client, body=body: client.post(
                path, content=body, headers=JSON
            ),
            422,
            f"more than {MAX_JSON_DEPTH} levels deep",
        )
        assert problem["type"].endswith("/invalid-request")


def test_json_nested_to_the_limit_is_accepted(server, agent):
    # Given a body nested exactly MAX_JSON_DEPTH deep (the body's object is level 1)
    body = fill('{"metadata": {"graph_id": "echo", "x": @}}', nested(MAX_JSON_DEPTH - 3, "[]"))
    # When a thread is created with it
    created = agent.post("/threads", content=body, headers=JSON)
    # Then it is recorded and read back as sent
    assert created.status_code == 200, created.text[:300]
    thread = agent.get(f"/threads/{created.json()['thread_id']}").json()
    assert thread["metadata"]["x"] == json.loads(nested(MAX_JSON_DEPTH - 3, "[]"))


def test_a_node_that_interrupts_with_a_value_nested_too_deep_fails_with_the_cause(server, agent):
    # Given a node that wraps its payload in 5,000 lists before calling interrupt()
    thread_id = agent.post("/threads", json={}).json()["thread_id"]
    # When it runs
    output = agent.post(
        f"/threads/{thread_id}/runs/wait",
        json={"assistant_id": "echo", "input": {"payload": "x", "nest": 5_000}},
    )
    # Then the run answers with the node's failure and its cause, not a 500
    assert output.status_code == 200
    error = output.json()["__error__"]
    assert error["error"] == "NotSerializableError"
    assert f"more than {MAX_JSON_DEPTH} levels deep" in error["message"]
    # And the thread stays readable, with NodeFailed on record
    assert agent.get(f"/threads/{thread_id}/state").status_code == 200
    with server.http("auditor") as auditor:
        events = auditor.get(f"/threads/{thread_id}/events").json()["events"]
    assert events[-1]["type"].endswith("NodeFailed")
    assert_alive(server)


# -- Unicode ---------------------------------------------------------------

EDGE_CASES = {
    "right-to-left override": "\u202eevil.exe\u202c",
    "combining (NFD)": "e\u0301",
    "precomposed (NFC)": "\u00e9",
    "emoji with joiners": "\U0001f469\u200d\U0001f469\u200d\U0001f467",
    "astral plane": "\U0001d518\U0001f600",
    "zero-width and BOM": "a\u200bb\ufeffc",
    "markup": "<script>alert(1)</script>&amp;",
}


def test_unicode_edge_cases_are_stored_and_shown_as_sent(server, agent, reviewer):
    # Given input, an interrupt value, metadata, a resume and a reason full of edge cases,
    # sent both as UTF-8 and as \\u escapes (surrogate pairs included)
    for name, text in EDGE_CASES.items():
        for ensure_ascii in (False, True):
            body = json.dumps(
                {
                    "assistant_id": "echo",
                    "metadata": {name: text},
                    "input": {"payload": {text: text}},
                },
                ensure_ascii=ensure_ascii,
            )
            output = agent.post("/runs/wait", content=body.encode(), headers=JSON)
            assert output.status_code == 200, output.text[:300]
            thread_id = output.headers["content-location"].split("/")[2]
            interrupt_id = output.json()["__interrupt__"][0]["id"]
            decided = reviewer.post(
                f"/approvals/{interrupt_id}/decision",
                json={"decision": "respond", "resume": text, "reason": text},
            )
            assert decided.status_code == 200, decided.text[:300]
            assert (decided.json()["resume"], decided.json()["reason"]) == (text, text)
            agent.get(f"/threads/{thread_id}/runs/{decided.json()['run_id']}/join")
            # Then every one comes back exactly as sent: no normalization, nothing dropped
            thread = agent.get(f"/threads/{thread_id}").json()
            assert thread["metadata"][name] == text
            assert thread["values"] == {"payload": {text: text}, "answer": text}


def test_the_html_report_escapes_what_principals_are_called(server, agent):
    # Given a reviewer whose principal id is markup
    name = "<img src=x onerror=alert(1)>"
    _, raw = server.services.keyring.create(name, "reviewer")
    _, interrupt_id = echo_paused(agent, "q")
    with server.http(headers={"x-api-key": raw}) as odd:
        decided = odd.post(f"/approvals/{interrupt_id}/decision", json={"decision": "approve"})
    assert decided.status_code == 200
    # When an auditor reads the HTML report
    with server.http("auditor") as auditor:
        page = auditor.get(
            "/reports/oversight",
            params={"format": "html", "wait_for": decided.headers["X-Holdpoint-Position"]},
        ).text
    # Then the name is shown escaped, never as markup
    assert "<img src=x" not in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page


@pytest.mark.parametrize(
    ("what", "literal", "fragment"),
    [
        ("NUL", '"a\\u0000b"', "U+0000"),
        ("lone high surrogate", '"a\\ud800b"', "lone UTF-16 surrogate"),
        ("lone low surrogate", '"\\udc00"', "lone UTF-16 surrogate"),
        ("NaN", "NaN", "NaN and Infinity"),
        ("Infinity", "-Infinity", "NaN and Infinity"),
    ],
)
def test_text_that_cannot_be_stored_is_a_422_naming_the_rule(
    server, agent, reviewer, what, literal, fragment
):
    _, interrupt_id = echo_paused(agent, "q")
    # Given a body with the character or number in a value, or in a key
    bodies = [
        ("/threads", agent, fill('{"metadata": {"graph_id": "echo", "k": @}}', literal)),
        ("/runs/wait", agent, fill('{"assistant_id": "echo", "input": {"payload": [@]}}', literal)),
        (
            f"/approvals/{interrupt_id}/decision",
            reviewer,
            fill('{"decision": "edit", "resume": @}', literal),
        ),
    ]
    if literal.startswith('"'):
        bodies.append(("/threads/search", agent, fill('{"metadata": {@: 1}}', literal)))
        bodies.append(("/threads", agent, fill('{"thread_id": @}', literal)))
    # When each is sent
    # Then each is a 422 naming the rule, nothing is recorded, and the server answers
    for path, client, body in bodies:
        rejected(
            server,
            lambda path=path, client=client, body=body: client.post(
                path, content=body.encode(), headers=JSON
            ),
            422,
            fragment,
        )


def test_a_body_that_is_not_utf8_is_a_400(server, agent):
    rejected(
        server,
        lambda: agent.post("/threads", content=b'{"metadata": {"k": "\xff\xfe"}}', headers=JSON),
        400,
        "not valid UTF-8",
    )


@pytest.mark.parametrize(
    ("path", "params"),
    [
        ("/threads/a%00b", None),
        ("/threads/a%0Ab/state", None),
        ("/approvals", {"graph_id": "a\x00b"}),
        ("/approvals", {"node": "line\nbreak"}),
        ("/audit/verify", {"thread_id": "\x1b[31mred"}),
    ],
)
def test_control_characters_in_a_path_or_query_are_a_422(server, path, params):
    # Given a path or query value with a control character (percent-encoded)
    with server.http("admin") as admin:
        # When it is requested
        # Then it is a 422, nothing is recorded, and the server answers
        rejected(server, lambda: admin.get(path, params=params), 422, "control character")


# -- thread ids ---------------------------------------------------------------

REFUSED_IDS = [
    "a/b",
    "../../etc/passwd",
    "..",
    ".",
    "a\\b",
    "a?b",
    "a#b",
    "a%2Fb",
    "a\nb",
    "tab\there",
    " padded",
    "padded ",
    "rtl\u202eoverride",
    "zero\u200bwidth",
    "x" * 257,
]
ACCEPTED_IDS = ["refund-2025-001", "rückerstattung 7", "emoji-\U0001f600", "a:b@c+d=e,f;g!$&'()*"]


@pytest.mark.parametrize("thread_id", REFUSED_IDS)
def test_a_thread_id_that_no_url_could_name_is_a_422_stating_the_rule(server, agent, thread_id):
    # Given a thread id with a path separator, URL syntax, a control or invisible
    # character, surrounding spaces, or too many characters
    body = {"thread_id": thread_id, "metadata": {"graph_id": "echo"}}
    # When a thread is created with it
    problem = rejected(server, lambda: agent.post("/threads", json=body), 422, "body.thread_id")
    # Then the problem states the rule
    assert "a thread id is 1 to 256 printable characters" in json.dumps(problem["errors"])


def test_a_run_cannot_create_a_thread_whose_id_no_url_could_name(server, agent):
    # Given a run that would create its thread from the path: `..` once percent-decoded
    body = {"assistant_id": "echo", "input": {"payload": 1}, "if_not_exists": "create"}
    # When it is sent
    # Then it is a 422 stating the rule, and nothing is recorded
    rejected(
        server,
        lambda: agent.post("/threads/%2E%2E/runs/wait", json=body),
        422,
        "path.thread_id",
        "a thread id is",
    )


@pytest.mark.parametrize("thread_id", ACCEPTED_IDS)
def test_a_thread_id_within_the_rule_is_stored_and_read_back(server, agent, thread_id):
    # Given a thread id with non-ASCII letters, an emoji, spaces or URL sub-delimiters
    created = agent.post(
        "/threads", json={"thread_id": thread_id, "metadata": {"graph_id": "echo"}}
    )
    assert created.status_code == 200, created.text[:300]
    # When it is read back by its percent-encoded URL, and by the SDK
    by_url = agent.get(f"/threads/{quote(thread_id, safe='')}")
    by_sdk = server.sdk("agent").threads.get(thread_id)
    # Then it is the same thread, with the same id
    assert by_url.json()["thread_id"] == thread_id
    assert by_sdk["thread_id"] == thread_id


def test_no_path_reaches_outside_the_api(server, agent):
    # Given paths that climb out of /threads, percent-encoded so no client normalises them
    for path in ["/threads/..%2F..%2Fetc%2Fpasswd", "/threads/%2E%2E/%2E%2E/openapi.json"]:
        # When they are requested
        response = agent.get(path)
        # Then they name no thread and no file: a 404 problem
        assert_problem(response, 404)
        assert "root:" not in response.text
    assert_alive(server)


@pytest.mark.parametrize("since", ["0001-01-01T00:00:00+14:00", "0001-01-15"])
def test_a_report_period_at_the_start_of_the_calendar_is_a_clear_422(server, since):
    with server.http("auditor") as auditor:
        answer = auditor.get("/reports/oversight", params={"since": since})
    assert answer.status_code == 422, answer.text
    assert answer.json()["detail"].startswith(f"Invalid query.since: {since!r}")
    assert server_answers(server)


def server_answers(server) -> bool:
    with server.http() as anyone:
        return anyone.get("/healthz").status_code == 200


@pytest.mark.parametrize(
    ("content_type", "parsed_as_json"),
    [
        (None, True),
        (b"application/json", True),
        (b"Application/JSON; charset=utf-8", True),
        (b"application/merge-patch+json", True),
        (b"text/plain", False),
        (b"application/x-www-form-urlencoded", False),
    ],
)
def test_the_bodies_checked_are_those_fastapi_reads_as_json(content_type, parsed_as_json):
    headers = [] if content_type is None else [(b"content-type", content_type)]
    assert is_json(headers) is parsed_as_json
