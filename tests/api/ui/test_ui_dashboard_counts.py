"""Every count on the oversight dashboard, a figure's or a part's (decisions of each kind
by reviewer, interrupts by outcome, the backlog by age), opens its list, read page by page
with the filters kept in the URL: the rows across its pages are as many as the count, each
linked to its thread."""

from __future__ import annotations

import os
import re
from html import unescape
from urllib.parse import parse_qs, urlsplit

import pytest

from projections.report_lists import FIGURES, PARTS
from tests.api.http_harness import running_server
from tests.api.ui.accessibility import accessible_context, axe_violations
from tests.api.ui.browser import sign_in
from tests.api.ui.story import decided, paused, scripted_history
from tests.api.ui.ui_client import UiClient

if os.environ.get("CI", "").lower() != "true":  # in CI a missing Playwright fails collection
    pytest.importorskip("playwright")
from playwright.sync_api import expect

LINK = re.compile(
    r'<a data-figure="([a-z_]+)"(?: data-part="([^"]*)")? href="([^"]+)">[^<]*: (\d+)</a>'
)
ROW = re.compile(r'<li data-thread="([^"]+)">\s*<a class="id" href="([^"]+)"')
NEXT = re.compile(r'<a id="next-page" rel="next" href="([^"]+)">')
FILTERS = {"days": ["7"], "graph_id": ["refund"]}


@pytest.fixture
def history(tmp_path):
    """A server with five refunds (two approved by two reviewers, one rejected, two open),
    one more rejected and one cancelled; and the counts it made."""
    with running_server(f"sqlite:///{tmp_path / 'holdpoint.db'}") as fresh:
        counts = scripted_history(fresh)
        decided(fresh, paused(fresh)[1], "reject", who="reviewer2")
        cancelled, _ = paused(fresh)
        with fresh.http("reviewer") as reviewer:
            stop = reviewer.post(f"/threads/{cancelled}/cancel", json={"reason": "duplicate"})
        assert stop.status_code == 200, stop.text
        yield fresh, counts


def rows_across_pages(client, href):
    """Every row of a list, following its "Next page" links; and the queries of its pages."""
    rows, queries = [], []
    while href is not None:
        page = client.get(href)
        assert page.status_code == 200, page.text
        queries.append(parse_qs(urlsplit(href).query))
        rows += ROW.findall(page.text)
        following = NEXT.search(page.text)
        href = unescape(following.group(1)) if following else None
    return rows, queries


def test_every_dashboard_count_equals_the_length_of_its_drill_down_list(history):
    server, counts = history
    with UiClient(server.url) as auditor:
        assert auditor.sign_in(server.keys["auditor"]).status_code == 303
        # Given the dashboard of the last 7 days of the refund graph
        dashboard = auditor.get("/ui/dashboard?days=7&graph_id=refund")
        assert dashboard.status_code == 200
        links = [
            (name, part, unescape(href), int(count))
            for name, part, href, count in LINK.findall(dashboard.text)
        ]
        # Then it shows every figure, and the parts of those split by reviewer or outcome
        assert {name for name, part, _, _ in links if not part} == set(FIGURES)
        parts = {(name, part): count for name, part, _, count in links if part}
        assert parts[("decisions", "reviewer")] == 2
        assert parts[("decisions", "reviewer2")] == 2
        assert parts[("interrupts_raised", "decided")] == counts["decisions"] + 1
        assert parts[("interrupts_raised", "cancelled")] == 1
        assert parts[("decisions_reject", "reviewer2")] == 1
        assert parts[("backlog", "under 1 h")] == counts["open"]
        assert {name for name, _ in parts} == set(PARTS) - {
            f"decisions_{kind}" for kind in ("edit", "respond", "escalate")
        }
        assert 0 not in parts.values()  # a part that counts nothing is not shown

        for name, part, href, count in links:
            # When each count's link is followed, two rows a page
            rows, queries = rows_across_pages(auditor, f"{href}&limit=2")
            # Then its rows across the pages are as many as the count, each thread's linked
            assert len(rows) == count, (name, part)
            assert all(link == f"/ui/threads/{thread}" for thread, link in rows)
            # And every page kept the dashboard's filters, the figure and its part
            for query in queries:
                assert {k: query[k] for k in ("days", "graph_id", "figure")} == {
                    **FILTERS,
                    "figure": [name],
                }
                if part:
                    assert query[PARTS[name].param] == [part]
            # And a list longer than a page took more than one
            assert len(queries) == max(1, (count + 1) // 2), (name, part)
        # And the history had lists of several pages to follow
        assert any(count > 2 for *_, count in links)


def test_a_part_the_figure_is_not_split_by_is_refused_clearly(history):
    server, _ = history
    with UiClient(server.url) as auditor:
        assert auditor.sign_in(server.keys["auditor"]).status_code == 303
        wrong = auditor.get("/ui/dashboard/list?figure=backlog&reviewer=reviewer")
        unknown = auditor.get("/ui/dashboard/list?figure=interrupts_raised&outcome=lost")
        too_many = auditor.get("/ui/dashboard/list?figure=backlog&limit=1000")
    assert wrong.status_code == 422
    assert "figure 'backlog' is not split by reviewer" in unescape(wrong.text)
    assert unknown.status_code == 422
    assert "has no part 'lost': one of decided, cancelled" in unescape(unknown.text)
    assert too_many.status_code == 422
    assert "a whole number from 1 to 200" in too_many.text


def test_in_chromium_an_auditor_pages_through_a_part_of_a_count(history, browser):
    server, _ = history
    page = accessible_context(browser).new_page()
    sign_in(page, server.url, server.keys["auditor"], "/ui/dashboard")
    # Given the dashboard, and the decisions of one reviewer on it
    page.goto(f"{server.url}/ui/dashboard?days=7&graph_id=refund")
    link = page.locator('#drill-down a[data-figure="decisions"][data-part="reviewer2"]')
    expect(link).to_have_text("reviewer2: 2")
    # When the auditor opens them, one a page
    page.goto(f"{server.url}{link.get_attribute('href')}&limit=1")
    # Then the first page shows one of the two, and axe-core finds nothing to fix
    expect(page.locator("#drill-count")).to_have_text("2")
    expect(page.locator("#drill-list li")).to_have_count(1)
    first = page.locator("#drill-list li").get_attribute("data-thread")
    assert axe_violations(page) == []
    # When they go to the next page
    page.get_by_role("link", name="Next page").click()
    # Then it shows the other, numbered on from the first page's, the filters and the part
    # still in the URL, and no next page
    expect(page.locator("#drill-list li")).not_to_have_attribute("data-thread", first or "")
    expect(page.locator("#drill-list")).to_have_attribute("start", "2")
    expect(page.get_by_text("2 to 2 of 2.")).to_be_visible()
    expect(page.locator("#next-page")).to_have_count(0)
    query = parse_qs(urlsplit(page.url).query)
    assert {k: query[k] for k in ("days", "graph_id", "figure", "reviewer", "limit")} == {
        **FILTERS,
        "figure": ["decisions"],
        "reviewer": ["reviewer2"],
        "limit": ["1"],
    }
    page.context.close()
