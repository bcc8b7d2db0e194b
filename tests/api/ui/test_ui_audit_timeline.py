"""The thread page's audit timeline, as an auditor reads it: each interrupt's payload as
its decider was shown it, with its digest, which the decision event names; and, for each
event, which seal reaches it, or that none does yet and how far the latest one reaches."""

from __future__ import annotations

import json
import os
import re

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from domain.oversight.hold_points import question_digest
from domain.record.thread import WorkflowThread
from integrity.sealing import make_seal
from tests.api.http_harness import running_server
from tests.api.ui.browser import sign_in
from tests.api.ui.story import decided, paused
from tests.api.ui.ui_client import UiClient

if os.environ.get("CI", "").lower() != "true":  # in CI a missing Playwright fails collection
    pytest.importorskip("playwright")
from playwright.sync_api import expect

SEAL_REACH = re.compile(
    r'<li class="event" data-event="(\w+)" data-version="(\d+)">'
    r'.*?<p class="seal-reach">([^<]*)</p>',
    re.DOTALL,
)


def the_decision(server, thread_id):
    """The thread's decision event, as the store holds it."""
    events = server.store.thread_events(thread_id)
    return next(e for e in events if isinstance(e, WorkflowThread.InterruptResumed))


def test_the_audit_page_shows_the_payload_and_its_digest_equal_to_the_decision_events(
    server, browser
):
    # Given a refund paused for a human, and the payload its decision page shows a reviewer
    thread_id, interrupt_id = paused(server, values={"refund_amount": 412.5})
    reviewer = browser.new_context().new_page()
    sign_in(reviewer, server.url, server.keys["reviewer"], f"/ui/approvals/{interrupt_id}")
    shown = reviewer.locator("#payload").inner_text()
    # When the reviewer approves it there
    reviewer.get_by_role("button", name="Approve", exact=True).click()
    expect(reviewer.locator("#decided-by")).to_contain_text("approve")
    reviewer.context.close()

    # And an auditor opens the thread's page
    auditor = browser.new_context().new_page()
    sign_in(auditor, server.url, server.keys["auditor"], f"/ui/threads/{thread_id}")
    asked = auditor.locator('#timeline li[data-event="InterruptRaised"]')
    answered = auditor.locator('#timeline li[data-event="InterruptResumed"]')
    expect(answered).to_have_count(1)

    # Then the timeline shows the payload exactly as the reviewer was shown it
    assert asked.locator(".asked-payload").inner_text() == shown
    # And its digest is the one the decision event in the store records, which is the
    # digest of that very payload
    decision = the_decision(server, thread_id)
    assert decision.interrupt_id == interrupt_id
    assert decision.digest == question_digest(json.loads(shown))
    expect(asked.locator(".asked-digest")).to_have_text(decision.digest)
    # And the decision's entry names the same digest, and says it is that payload's
    expect(answered.locator(".answered-digest")).to_have_text(decision.digest)
    expect(answered.locator(".answered-on")).to_contain_text("the payload its interrupt asked")
    auditor.context.close()


def seal_reach_of(client, thread_id):
    page = client.get(f"/ui/threads/{thread_id}")
    assert page.status_code == 200, page.text
    return {int(version): text for _, version, text in SEAL_REACH.findall(page.text)}


def test_each_event_says_which_seal_reaches_it_or_how_far_the_latest_one_reaches(tmp_path):
    with (
        running_server(f"sqlite:///{tmp_path / 'holdpoint.db'}") as fresh,
        UiClient(fresh.url) as auditor,
    ):
        assert auditor.sign_in(fresh.keys["auditor"]).status_code == 303
        # Given a thread paused for a human in a store never sealed
        thread_id, interrupt_id = paused(fresh)
        before = seal_reach_of(auditor, thread_id)
        # Then each of its events is not yet sealed, and the page says there is no seal
        assert before, "no event listed"
        assert all("not yet sealed (the store has no seal)" in text for text in before.values())

        # When the log is sealed
        key = Ed25519PrivateKey.generate()
        first, _, problems = make_seal(fresh.store, key)
        assert first is not None, problems
        # And the thread goes on (its interrupt decided, its run ended)
        decided(fresh, interrupt_id, "approve")
        after = seal_reach_of(auditor, thread_id)

        # Then its events up to then are sealed by seal 1, at positions within its reach
        reach = f"sealed by seal 1 (positions 1 to {first['position']},"
        for version in before:
            assert reach in after[version], after[version]
            position = int(after[version].split(":")[0].removeprefix("Position "))
            assert 1 <= position <= first["position"]
        # And those recorded since are not yet, the latest seal's reach named
        later = sorted(set(after) - set(before))
        assert later, "the decision recorded no event"
        for version in later:
            assert (
                f"not yet sealed (the latest seal, 1, reaches position {first['position']})"
                in (after[version])
            )

        # When the log is sealed again
        second, _, problems = make_seal(fresh.store, key)
        assert second is not None, problems
        again = seal_reach_of(auditor, thread_id)
        # Then the later events are sealed by seal 2, the earlier ones still by seal 1
        assert all(reach in again[version] for version in before)
        assert all(
            f"sealed by seal 2 (positions 1 to {second['position']}," in again[version]
            for version in later
        )
