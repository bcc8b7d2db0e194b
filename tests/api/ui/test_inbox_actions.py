"""The inbox's actions over plain HTTP: the CSRF token, the role, the bulk rule, the
digest each decision is bound to, and a resend. No browser needed."""

from __future__ import annotations

from urllib.parse import parse_qs, urlencode, urlsplit

import pytest

from domain.record.thread import WorkflowThread
from tests.api.ui.story import paused
from tests.api.ui.ui_client import UiClient, csrf_of, idempotency_key_of

CONTENT_REVIEW = {"content": "", "approval": "", "status": "started"}


@pytest.fixture
def ui(server):
    with UiClient(server.url) as client:
        yield client


def refusals(server):
    with server.http("auditor") as auditor:
        return auditor.get("/audit/refusals", params={"limit": 1000}).json()["data"]


def decisions_of(server, thread_id):
    events = server.store.thread_events(thread_id)
    return [e for e in events if isinstance(e, WorkflowThread.InterruptResumed)]


def assignments_of(server, thread_id):
    events = server.store.thread_events(thread_id)
    return [e for e in events if isinstance(e, WorkflowThread.InterruptAssigned)]


def posted(ui, form, interrupt_ids):
    """The inbox's form posted with several selected items (a field given many times)."""
    body = urlencode([*form.items(), *(("interrupt", i) for i in interrupt_ids)])
    headers = {"content-type": "application/x-www-form-urlencoded"}
    return ui.request("POST", "/ui/inbox/act", content=body, headers=headers)


def inbox_form(ui, **fields):
    page = ui.get("/ui/inbox")
    assert page.status_code == 200, page.text
    return {
        "csrf_token": csrf_of(page.text),
        "idempotency_key": idempotency_key_of(page.text),
        "back": "q=x",
        **fields,
    }


def said(answer):
    """What the redirect back to the inbox says was done."""
    assert answer.status_code == 303, answer.text
    query = parse_qs(urlsplit(answer.headers["location"]).query)
    return query.get("count"), query.get("left", [])


def test_an_action_without_its_csrf_token_is_refused_and_recorded(server, ui):
    # Given a signed-in reviewer and an open interrupt
    thread_id, interrupt_id = paused(server)
    ui.sign_in(server.keys["reviewer"])
    form = inbox_form(ui, action="claim", interrupt=interrupt_id, csrf_token="")
    before = len(refusals(server))

    # When the claim is posted without the token
    answer = ui.post_form("/ui/inbox/act", form)

    # Then it is refused, recorded, and no one is assigned
    assert answer.status_code == 403
    assert [r["reason"] for r in refusals(server)[before:]] == ["forbidden"]
    assert assignments_of(server, thread_id) == []


def test_a_role_that_may_not_decide_may_not_act_as_by_the_api(server, ui):
    # Given an auditor signed in, and an open interrupt
    _, interrupt_id = paused(server)
    ui.sign_in(server.keys["auditor"])
    page = ui.get("/ui/inbox")
    before = len(refusals(server))

    # When the auditor posts a claim anyway
    answer = ui.post_form(
        "/ui/inbox/act",
        {"csrf_token": csrf_of(page.text), "action": "claim", "interrupt": interrupt_id},
    )

    # Then it is refused as the API refuses it, and recorded; the page offered no action
    assert answer.status_code == 403
    assert [r["reason"] for r in refusals(server)[before:]] == ["wrong_role"]
    assert 'id="bulk"' not in page.text
    assert f'id="claim-{interrupt_id}"' not in page.text


def test_one_item_posted_as_alone_with_others_is_still_a_bulk_action(server, ui):
    # Given two refunds, whose graph does not allow deciding them in bulk
    (first, first_id), (second, second_id) = paused(server), paused(server)
    ui.sign_in(server.keys["reviewer"])
    form = inbox_form(ui, action="approve", alone="1")

    # When both are approved in one post that claims to be a single confirmed item
    answer = posted(ui, form, [first_id, second_id])

    # Then neither is decided, each left for its own page
    assert said(answer) == (["0"], [f"{first_id}~bulk", f"{second_id}~bulk"])
    assert decisions_of(server, first) == decisions_of(server, second) == []


def test_a_decision_from_the_inbox_is_bound_to_the_digest_it_showed(server, ui):
    # Given an open refund, and an inbox form that carries another payload's digest
    thread_id, interrupt_id = paused(server)
    ui.sign_in(server.keys["reviewer"])
    form = inbox_form(ui, action="approve", alone="1", interrupt=interrupt_id)
    before = len(refusals(server))

    # When it is approved on that digest
    stale = ui.post_form("/ui/inbox/act", {**form, f"digest-{interrupt_id}": "sha256:" + "0" * 64})

    # Then it is refused as a changed question (409), and nothing is decided
    assert said(stale) == (["0"], [f"{interrupt_id}~409"])
    assert decisions_of(server, thread_id) == []
    assert [r["principal_id"] for r in refusals(server)[before:]] == ["reviewer"]


def test_a_resent_bulk_decision_records_nothing_new(server, ui):
    # Given two content reviews, which their graph allows to approve in bulk
    reviews = [paused(server, graph="content_review", values=CONTENT_REVIEW) for _ in range(2)]
    ui.sign_in(server.keys["reviewer"])
    form = inbox_form(ui, action="approve", reason="Fine")
    ids = [interrupt_id for _, interrupt_id in reviews]

    # When the bulk approval is posted twice (a resend of the form, say)
    first = posted(ui, form, ids)
    again = posted(ui, form, ids)

    # Then each review has one decision: the resend found them no longer open
    assert said(first) == (["2"], [])
    assert said(again) == (["0"], [f"{i}~gone" for i in ids])
    for thread_id, _ in reviews:
        assert [(d.decision, d.actor["id"]) for d in decisions_of(server, thread_id)] == [
            ("approve", "reviewer")
        ]
