"""The inbox as a reviewer's workspace, in a real Chromium on a real server: titles,
search, assignment, bulk actions, items the viewer may not decide, and the keyboard.

Each test tags its threads with metadata of its own and searches the inbox for that
tag, so that the tests of this module (one server) do not see each other's items.
Waits are on the page's DOM (Playwright's `expect`), never on time.
"""

from __future__ import annotations

import os

import pytest

from tests.api.ui.accessibility import accessible_context, axe_violations
from tests.api.ui.browser import sign_in

if os.environ.get("CI", "").lower() != "true":  # in CI a missing Playwright fails collection
    pytest.importorskip("playwright")
from playwright.sync_api import expect

DRAFT = "Draft: This is the generated content that requires review."
CONTENT_REVIEW = {"content": "", "approval": "", "status": "started"}


def started(server, graph, values, tag, who="agent", **metadata):
    """A new thread tagged `tag`, paused at its interrupt: (thread id, interrupt id)."""
    sdk = server.sdk(who)
    thread_id = sdk.threads.create(metadata={"batch": tag, **metadata})["thread_id"]
    output = sdk.runs.wait(thread_id, graph, input=values)
    return thread_id, output["__interrupt__"][0]["id"]


def audit(server, thread_id):
    with server.http("auditor") as auditor:
        return auditor.get(f"/threads/{thread_id}/audit").json()["entries"]


def events(server, thread_id, kind):
    return [e for e in audit(server, thread_id) if e["event"] == kind]


def item(page, interrupt_id):
    return page.locator(f'li.item[data-interrupt="{interrupt_id}"]')


# -- titles ------------------------------------------------------------------


def test_content_review_items_are_titled_with_their_draft_never_json(server, page):
    # Given a content review waiting for a reviewer, and a refund
    _, review = started(server, "content_review", CONTENT_REVIEW, "titles")
    _, refund = started(server, "echo", {"payload": {"customer": "Ann", "total": 12}}, "titles")

    # When the reviewer looks for them
    sign_in(page, server.url, server.keys["reviewer"], "/ui/inbox?q=titles")

    # Then the review is titled by its draft, as its graph declared; the other by its fields
    expect(item(page, review).locator("a.open")).to_have_text(DRAFT)
    expect(item(page, refund).locator("a.open")).to_have_text("customer: Ann · total: 12")
    expect(page.locator("#inbox-items")).not_to_contain_text("{")


# -- search ------------------------------------------------------------------


def test_a_search_finds_items_by_thread_id_metadata_and_payload(server, page):
    # Given three threads for different customers
    acme, acme_item = started(
        server, "echo", {"payload": {"note": "blue widget"}}, "s1", customer="Acme"
    )
    _, globex_item = started(
        server, "echo", {"payload": {"note": "red gadget"}}, "s1", customer="Globex"
    )
    sign_in(page, server.url, server.keys["reviewer"])

    # When the reviewer searches for a customer (metadata)
    page.get_by_label("Search").fill("s1 globex")
    page.get_by_role("button", name="Apply").click()

    # Then only that customer's item is listed, and the count says it is a match
    expect(item(page, globex_item)).to_be_visible()
    expect(item(page, acme_item)).to_have_count(0)
    expect(page.locator("#count-open")).to_have_text("1 open matching")

    # And a word of a payload, or a thread id, finds the other
    page.goto(f"{server.url}/ui/inbox?q=widget+s1")
    expect(page.locator("li.item")).to_have_count(1)
    expect(item(page, acme_item)).to_be_visible()
    page.goto(f"{server.url}/ui/inbox?q={acme}")
    expect(page.locator("li.item")).to_have_count(1)
    expect(item(page, acme_item)).to_be_visible()


# -- assignment --------------------------------------------------------------


def test_claim_then_unassign_are_recorded_and_assigned_to_me_filters(server, page):
    # Given two open items
    mine, claimed = started(server, "echo", {"payload": {"n": 1}}, "claims")
    _, other = started(server, "echo", {"payload": {"n": 2}}, "claims")
    sign_in(page, server.url, server.keys["reviewer"], "/ui/inbox?q=claims")
    expect(item(page, claimed).locator(".assignee")).to_have_text("unassigned")

    # When the reviewer claims the first
    page.locator(f"#claim-{claimed}").click()

    # Then it says so, and it is on record as InterruptAssigned by the reviewer
    expect(page.locator("#outcome")).to_contain_text("1 item: claimed (recorded)")
    expect(item(page, claimed).locator(".assignee")).to_have_text("assigned to you")
    [assigned] = events(server, mine, "InterruptAssigned")
    assert assigned["actor"]["id"] == "reviewer"
    assert assigned["details"]["reviewer_id"] == "reviewer"

    # And "Assigned to me" lists it alone, the search kept
    page.get_by_label("Assigned to me").check()
    page.get_by_role("button", name="Apply").click()
    expect(page.locator("li.item")).to_have_count(1)
    expect(item(page, claimed)).to_be_visible()
    expect(item(page, other)).to_have_count(0)

    # When they unassign it
    page.locator(f"#unassign-{claimed}").click()

    # Then no one is assigned: on record, and "assigned to me" is empty
    expect(page.locator("#outcome")).to_contain_text("1 item: unassigned (recorded)")
    expect(page.locator("#inbox-empty")).to_be_visible()
    assert [e["details"]["reviewer_id"] for e in events(server, mine, "InterruptAssigned")] == [
        "reviewer",
        None,
    ]


def test_selected_items_are_assigned_to_another_reviewer_in_one_action(server, page):
    # Given three open items
    threads = [started(server, "echo", {"payload": {"n": n}}, "bulkassign") for n in range(3)]
    sign_in(page, server.url, server.keys["reviewer"], "/ui/inbox?q=bulkassign")

    # When the reviewer selects two and assigns them to reviewer2
    for _, interrupt_id in threads[:2]:
        page.locator(f"#select-{interrupt_id}").check()
    page.get_by_label("With the selected items").select_option("assign")
    page.get_by_label("Assign to", exact=True).select_option("reviewer2")
    page.get_by_role("button", name="Act on selected").click()

    # Then both are assigned to reviewer2, each by its own event; the third is not
    expect(page.locator("#outcome")).to_contain_text("2 items: assigned (recorded)")
    for _, interrupt_id in threads[:2]:
        expect(item(page, interrupt_id).locator(".assignee")).to_have_text("assigned to reviewer2")
    expect(item(page, threads[2][1]).locator(".assignee")).to_have_text("unassigned")
    for thread_id, _ in threads[:2]:
        [assigned] = events(server, thread_id, "InterruptAssigned")
        assert (assigned["actor"]["id"], assigned["details"]["reviewer_id"]) == (
            "reviewer",
            "reviewer2",
        )
    assert events(server, threads[2][0], "InterruptAssigned") == []


# -- bulk decisions ----------------------------------------------------------


def test_a_bulk_approval_decides_only_where_the_graph_allows_it_each_on_its_own(server, page):
    # Given two content reviews (their graph allows bulk) and a refund (its graph does not)
    reviews = [started(server, "content_review", CONTENT_REVIEW, "bulkdecide") for _ in range(2)]
    refund_thread, refund = started(server, "echo", {"payload": {"n": 1}}, "bulkdecide")
    sign_in(page, server.url, server.keys["reviewer"], "/ui/inbox?q=bulkdecide")
    expect(item(page, reviews[0][1])).to_contain_text("may be decided in bulk")

    # When the reviewer selects all three and approves them with a reason
    for interrupt_id in [*(i for _, i in reviews), refund]:
        page.locator(f"#select-{interrupt_id}").check()
    page.get_by_label("With the selected items").select_option("approve")
    page.get_by_label("Reason (for decisions)").fill("House style checked")
    page.get_by_role("button", name="Act on selected").click()

    # Then the two reviews are approved, the refund is left, saying why
    expect(page.locator("#outcome")).to_contain_text("2 items: approved (recorded)")
    expect(page.locator("#outcome-left")).to_contain_text(
        "its graph asks for it to be decided on its own page"
    )
    expect(item(page, refund)).to_be_visible()
    assert events(server, refund_thread, "InterruptResumed") == []
    # Each review by its own decision, bound to the digest of its own question
    keys = set()
    for thread_id, _ in reviews:
        [asked] = events(server, thread_id, "InterruptRaised")
        [answer] = events(server, thread_id, "InterruptResumed")
        assert (answer["actor"]["id"], answer["details"]["decision"]) == ("reviewer", "approve")
        assert answer["details"]["reason"] == "House style checked"
        assert answer["details"]["digest"] == asked["details"]["digest"]
        keys.add(answer["details"]["idempotency_key"])
    assert len(keys) == 2


# -- items the viewer may not decide ----------------------------------------


def test_items_the_viewer_may_not_decide_are_marked_with_the_reason(server, page):
    # Given an interrupt only an admin may decide, and one of a thread the admin started
    _, admins_only = started(server, "guarded", {"amount": 5.0, "paid": None}, "refusals")
    _, own = started(server, "echo", {"payload": {"n": 1}}, "refusals", who="admin")
    _, open_to_all = started(server, "echo", {"payload": {"n": 2}}, "refusals")

    # When a reviewer looks at the inbox
    sign_in(page, server.url, server.keys["reviewer"], "/ui/inbox?q=refusals")

    # Then the admin-only item is marked, with the role as the reason; the others are not
    expect(page.locator(f"#refused-{admins_only}")).to_contain_text("You may not decide this")
    expect(page.locator(f"#refused-{admins_only}")).to_contain_text("admin")
    expect(page.locator(f"#refused-{own}")).to_have_count(0)
    expect(page.locator(f"#refused-{open_to_all}")).to_have_count(0)

    # When the admin looks: their own thread is marked, for separation of duties
    page.context.clear_cookies()
    sign_in(page, server.url, server.keys["admin"], "/ui/inbox?q=refusals")
    expect(page.locator(f"#refused-{own}")).to_contain_text("separation of duties")
    expect(page.locator(f"#refused-{admins_only}")).to_have_count(0)

    # And approving it by keyboard says why not, and asks nothing
    page.keyboard.press("j")
    while page.evaluate("document.activeElement.id") != f"open-{own}":
        page.keyboard.press("j")
    page.keyboard.press("a")
    expect(page.locator("#keyboard-status")).to_contain_text("separation of duties")
    expect(page.locator("#confirm")).not_to_be_visible()


# -- keyboard ----------------------------------------------------------------


def test_j_and_k_pick_items_and_enter_opens_the_one_picked(server, page):
    # Given three items, and the keyboard section of the page
    ids = [started(server, "echo", {"payload": {"n": n}}, "keys")[1] for n in range(3)]
    sign_in(page, server.url, server.keys["reviewer"], "/ui/inbox?q=keys")
    expect(page.locator("#keyboard-help")).to_contain_text("next item")

    # When they go to the search (/) and type j and k there
    page.keyboard.press("/")
    page.keyboard.type("jk")

    # Then the letters are typed, in place of the search it held, and no item is picked
    expect(page.get_by_label("Search")).to_have_value("jk")
    expect(page.locator("li.item.current")).to_have_count(0)
    page.get_by_label("Search").blur()

    # When the reviewer goes down three times (to the third), then up once
    for key in ("j", "j", "ArrowDown", "k"):
        page.keyboard.press(key)

    # Then the second item is the current one, and its link has the focus
    expect(item(page, ids[1])).to_have_attribute("aria-current", "true")
    assert page.evaluate("document.activeElement.id") == f"open-{ids[1]}"

    # When they press Enter
    page.keyboard.press("Enter")

    # Then its page opens
    page.wait_for_url(f"{server.url}/ui/approvals/{ids[1]}")


def test_a_reviewer_works_through_a_queue_of_20_items_with_the_keyboard_alone(server, page):
    # Given 20 content reviews waiting
    threads = [started(server, "content_review", CONTENT_REVIEW, "queue20") for _ in range(20)]
    sign_in(page, server.url, server.keys["reviewer"], "/ui/inbox?q=queue20")
    expect(page.locator("li.item")).to_have_count(20)

    # When the reviewer picks the first item, then approves or rejects each in turn by
    # keyboard: a (or r), and Enter to confirm; one approval is first cancelled with Esc
    page.keyboard.press("j")
    for n in range(20):
        left = 20 - n
        expect(page.locator("li.item")).to_have_count(left)
        expect(page.locator("li.item").first).to_have_attribute("aria-current", "true")
        if n == 3:
            page.keyboard.press("a")
            expect(page.locator("#confirm")).to_be_visible()
            page.keyboard.press("Escape")
            expect(page.locator("#confirm")).not_to_be_visible()
            expect(page.locator("li.item")).to_have_count(left)
        page.keyboard.press("a" if n % 2 == 0 else "r")
        expect(page.locator("#confirm")).to_be_visible()
        expect(page.locator("#confirm-what")).to_have_text(DRAFT)
        page.keyboard.press("Enter")
        expect(page.locator("#outcome")).to_contain_text(
            "approved (recorded)" if n % 2 == 0 else "rejected (recorded)"
        )

    # Then the queue is empty, and each item, oldest first, was decided by the reviewer
    # as they asked
    expect(page.locator("#inbox-empty")).to_be_visible()
    decisions = []
    for thread_id, _ in threads:
        [answer] = events(server, thread_id, "InterruptResumed")
        decisions.append((answer["actor"]["id"], answer["details"]["decision"]))
    assert decisions == [("reviewer", "approve" if n % 2 == 0 else "reject") for n in range(20)]


def test_axe_core_finds_no_wcag_violation_in_the_confirmation_or_on_refused_items(server, browser):
    # Given an item the reviewer may not decide, and one they may
    _, refused = started(server, "guarded", {"amount": 5.0, "paid": None}, "axe")
    _, allowed = started(server, "echo", {"payload": {"note": "x"}}, "axe")
    context = accessible_context(browser)
    page = context.new_page()
    sign_in(page, server.url, server.keys["reviewer"], "/ui/inbox?q=axe")
    expect(page.locator(f"#refused-{refused}")).to_be_visible()

    # When the reviewer picks the one they may decide and asks to approve it
    page.keyboard.press("j")
    while page.evaluate("document.activeElement.id") != f"open-{allowed}":
        page.keyboard.press("j")
    page.keyboard.press("a")
    expect(page.locator("#confirm")).to_be_visible()

    # Then axe-core finds nothing against WCAG 2.0 and 2.1, A and AA
    assert axe_violations(page) == []

    # Nor once it is rejected, the page saying what was done, and what was left of a bulk
    page.keyboard.press("Escape")
    page.goto(f"{server.url}/ui/inbox?q=axe&mine=1&done=reject&count=1&left={refused}~bulk")
    expect(page.locator("#outcome-left")).to_be_visible()
    assert axe_violations(page) == []
    context.close()
