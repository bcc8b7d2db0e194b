"""The thread search page in real Chromium: an auditor narrows the list with the form
and pages on, and axe-core finds no WCAG 2 A/AA violation on the page."""

from __future__ import annotations

import os
import uuid

import pytest

from tests.api.ui.accessibility import accessible_context, axe_violations
from tests.api.ui.browser import sign_in

if os.environ.get("CI", "").lower() != "true":  # in CI a missing Playwright fails collection
    pytest.importorskip("playwright")
from playwright.sync_api import expect


def echo_threads(server, count, **metadata):
    agent = server.sdk("agent")
    made = []
    for _ in range(count):
        thread_id = agent.threads.create(metadata=metadata)["thread_id"]
        agent.runs.wait(thread_id, "echo", input={"payload": {"note": "hi"}})
        made.append(thread_id)
    return made


def test_an_auditor_searches_by_metadata_and_pages_on(server, browser):
    # Given 27 threads of one batch (a page of 25 and two more) and one outside it
    batch = uuid.uuid4().hex
    made = echo_threads(server, 27, batch=batch)
    echo_threads(server, 1, batch="other")
    page = accessible_context(browser).new_page()

    # When an auditor opens the search from the navigation and asks for the batch
    sign_in(page, server.url, server.keys["auditor"], "/ui/dashboard")
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Threads").click()
    page.get_by_label("Metadata (key=value, comma separated)").fill(f"batch={batch}")
    page.get_by_label("Status").select_option("interrupted")
    page.get_by_role("button", name="Search").click()

    # Then the first page lists 25 of them, newest first, and says how many match
    expect(page.locator("#thread-count")).to_have_text("27 threads matching, newest first")
    rows = page.locator("#thread-items [data-thread]")
    expect(rows).to_have_count(25)
    first = rows.evaluate_all("rows => rows.map(row => row.dataset.thread)")
    # And axe-core finds nothing to fix
    assert axe_violations(page) == []

    # When they follow "Next page"
    page.get_by_role("link", name="Next page").click()

    # Then the other two are listed, the form still shows the filters, and no page follows
    expect(rows).to_have_count(2)
    rest = rows.evaluate_all("rows => rows.map(row => row.dataset.thread)")
    assert first + rest == list(reversed(made))
    expect(page.get_by_label("Metadata (key=value, comma separated)")).to_have_value(
        f"batch={batch}"
    )
    expect(page.get_by_role("link", name="Next page")).to_have_count(0)
    assert axe_violations(page) == []

    # And a row opens its thread's page
    rows.first.get_by_role("link").click()
    expect(page.locator("h1")).to_contain_text(rest[0])
    page.context.close()
