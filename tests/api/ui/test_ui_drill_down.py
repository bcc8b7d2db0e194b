"""The dashboard's drill-down: every count on the oversight dashboard opens the list of
the interrupts (or threads) it counts, each linked to its thread, with the dashboard's
filters kept; a count and its list come from one condition, so they are equal.

First on the oversight report's own history (decisions of every kind, fast ones,
deadlines expired, escalated, met and missed, cancellations, an open backlog; on every
store kind), then through the browser UI of a real server."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlsplit

import pytest

from projections.report_lists import FIGURES, PARTS, count_of, figure_list, figure_page, parts_of
from tests.api.http_harness import running_server
from tests.api.ui.accessibility import accessible_context, axe_violations
from tests.api.ui.browser import sign_in
from tests.api.ui.story import decided, paused, scripted_history
from tests.api.ui.ui_client import UiClient
from tests.projections.test_oversight_report import NOW, SINCE, UNTIL, report
from tests.projections.test_oversight_report import clock as clock  # noqa: PLC0414 - fixture
from tests.projections.test_oversight_report import db as db  # noqa: PLC0414 - fixture

LINK = re.compile(r'<a data-figure="([a-z_]+)" href="([^"]+)">[^<]*: (\d+)</a>')
ROW = re.compile(r'<li data-thread="([^"]+)">\s*<a class="id" href="([^"]+)"')


@pytest.mark.parametrize("graph_id", [None, "payouts"])
def test_every_count_of_the_report_equals_the_length_of_its_list(db, graph_id):
    # Given the report of a history with decisions, breaches, cancellations and a backlog
    full = report(db, graph_id=graph_id)
    for name in FIGURES:
        # When the list behind each figure is read for the same period and graph
        rows = figure_list(db, name, since=SINCE, until=UNTIL, graph_id=graph_id, now=NOW)
        # Then it has as many rows as the figure counts, all of that graph
        assert len(rows) == count_of(full, name), name
        assert graph_id is None or {r["graph_id"] for r in rows} <= {graph_id}, name
    # And the history has something behind the figures the brief names
    if graph_id is None:
        for name in ("fast_decisions", "deadline_breaches", "cancellations", "backlog"):
            assert count_of(full, name) > 0, name
        for name in ("decisions_reject", "decisions_edit", "decisions_expired"):
            assert count_of(full, name) > 0, name


@pytest.mark.parametrize("graph_id", [None, "payouts"])
def test_every_part_of_a_split_figure_equals_the_length_of_its_list(db, graph_id):
    # Given the report of the history, whose figures are split by reviewer, outcome, age
    full = report(db, graph_id=graph_id)
    shown = 0
    for name in PARTS:
        for value, count in parts_of(full, name):
            # When the list of each part shown is read, a page of 2 at a time
            rows = figure_list(
                db, name, since=SINCE, until=UNTIL, graph_id=graph_id, now=NOW, part=value
            )
            # Then it is as long as the part's count, and a page holds no more than asked
            assert len(rows) == count, (name, value)
            page = figure_page(
                db, name, since=SINCE, until=UNTIL, graph_id=graph_id, now=NOW, part=value, limit=2
            )
            assert len(page.rows) == min(count, 2)
            assert page.total == count
            shown += 1
        # And the parts of a figure add up to it (every decision has a reviewer or is
        # an expiry, every interrupt an outcome, every open one an age)
        if name in ("interrupts_raised", "backlog", "fast_decisions"):
            assert sum(n for _, n in parts_of(full, name)) == count_of(full, name), name
    assert shown > 0
    if graph_id is None:
        ages = dict(parts_of(full, "backlog"))
        assert len(ages) > 1, ages  # the history's backlog has interrupts of several ages


def test_the_lists_are_the_interrupts_each_figure_means(db):
    # Given the history's report period
    def listed(name):
        return figure_list(db, name, since=SINCE, until=UNTIL, graph_id=None, now=NOW)

    # Then fast decisions are human answers under the floor, breaches had a deadline,
    # the backlog is open, and each kind's list has only that kind
    assert all(
        r["decision"] != "expired" and r["seconds_to_decision"] < 10
        for r in listed("fast_decisions")
    )
    assert all(r["due_by"] is not None for r in listed("deadline_breaches"))
    assert {r["outcome"] for r in listed("backlog")} == {"open"}
    assert {r["decision"] for r in listed("decisions_edit")} == {"edit"}
    assert all(r["reason"] for r in listed("cancellations"))


def links_of(page: str) -> dict[str, tuple[str, int]]:
    return {name: (href.replace("&amp;", "&"), int(n)) for name, href, n in LINK.findall(page)}


def test_each_dashboard_count_links_to_a_list_as_long_with_the_filters_kept(tmp_path):
    # Given a server with a scripted history, and an auditor signed in
    with running_server(f"sqlite:///{tmp_path / 'holdpoint.db'}") as fresh:
        counts = scripted_history(fresh)
        with UiClient(fresh.url) as auditor:
            assert auditor.sign_in(fresh.keys["auditor"]).status_code == 303

            # When they open the dashboard for the last 7 days of the refund graph
            dashboard = auditor.get("/ui/dashboard?days=7&graph_id=refund")
            assert dashboard.status_code == 200
            links = links_of(dashboard.text)

            # Then every figure that has a list links to it, with the history's counts
            assert set(links) == set(FIGURES)
            assert links["interrupts_raised"][1] == counts["raised"]
            assert links["decisions_approve"][1] == counts["approve"]
            assert links["backlog"][1] == counts["open"]
            for name, (href, count) in links.items():
                query = parse_qs(urlsplit(href).query)
                assert query == {"days": ["7"], "graph_id": ["refund"], "figure": [name]}
                # And each list is as long as its count, each row linked to its thread
                listing = auditor.get(href)
                assert listing.status_code == 200, listing.text
                rows = ROW.findall(listing.text)
                assert len(rows) == count, name
                assert f'<span id="drill-count">{count}</span>' in listing.text
                assert all(link == f"/ui/threads/{thread}" for thread, link in rows)
                assert 'href="/ui/dashboard?days=7&amp;graph_id=refund"' in listing.text
            opened = ROW.findall(auditor.get(links["decisions_reject"][0]).text)
            assert auditor.get(opened[0][1]).status_code == 200

            # And each list the auditor opened is on record as a read of the report
            with fresh.http("auditor") as api:
                data = api.get("/audit/reads", params={"actor": "auditor", "limit": 1000})
            targets = {r["target"] for r in data.json()["data"] if r["kind"] == "report"}
            assert "dashboard/list?days=7&figure=fast_decisions&graph_id=refund" in targets


def test_in_chromium_each_count_clicked_shows_as_many_rows_and_each_row_opens_its_thread(
    server, browser
):
    pytest.importorskip("playwright")
    from playwright.sync_api import expect  # noqa: PLC0415 - only where Playwright is

    # Given one refund rejected and one still open, and an auditor on the dashboard
    decided(server, paused(server)[1], "reject")
    thread_id, _ = paused(server)
    page = browser.new_context().new_page()
    sign_in(page, server.url, server.keys["auditor"], "/ui/dashboard")
    page.goto(f"{server.url}/ui/dashboard?days=1&graph_id=refund")
    links = page.locator("#drill-down a:not([data-part])")
    expect(links).to_have_count(len(FIGURES))
    for name in FIGURES:
        # When they click a figure's count
        page.goto(f"{server.url}/ui/dashboard?days=1&graph_id=refund")
        link = page.locator(f'#drill-down a[data-figure="{name}"]:not([data-part])')
        count = int(link.inner_text().rsplit(": ", 1)[1])
        link.click()
        # Then its list has as many rows, with the period and graph kept in the URL
        expect(page.locator("h1")).to_contain_text(FIGURES[name].label)
        expect(page.locator("#drill-list li")).to_have_count(count)
        assert parse_qs(urlsplit(page.url).query) == {
            "days": ["1"],
            "graph_id": ["refund"],
            "figure": [name],
        }
    # And a row of the backlog opens its thread's page
    page.goto(f"{server.url}/ui/dashboard/list?days=1&graph_id=refund&figure=backlog")
    page.locator(f'#drill-list li[data-thread="{thread_id}"] a').click()
    expect(page.locator("h1")).to_contain_text(thread_id)
    page.context.close()


def test_an_unknown_figure_is_refused_clearly(server):
    with UiClient(server.url) as auditor:
        assert auditor.sign_in(server.keys["auditor"]).status_code == 303
        refused = auditor.get("/ui/dashboard/list?figure=everything")
    assert refused.status_code == 422
    assert "Invalid figure" in refused.text


@pytest.mark.parametrize("figure", ["backlog", "decisions_reject", "cancellations"])
def test_axe_core_finds_nothing_to_fix_on_the_dashboard_and_a_drill_down(server, browser, figure):
    from playwright.sync_api import expect  # noqa: PLC0415 - only where Playwright is

    # Given a rejected refund and an open one
    decided(server, paused(server)[1], "reject")
    paused(server)
    page = accessible_context(browser).new_page()
    # When an auditor opens the dashboard, then a figure's list
    sign_in(page, server.url, server.keys["auditor"], "/ui/dashboard")
    expect(page.locator("#drill-down a:not([data-part])")).to_have_count(len(FIGURES))
    dashboard_violations = axe_violations(page)
    page.goto(f"{server.url}/ui/dashboard/list?days=1&figure={figure}")
    expect(page.locator("h1")).to_contain_text(FIGURES[figure].label)
    # Then axe-core finds no WCAG 2 A/AA violation on either
    assert dashboard_violations == []
    assert axe_violations(page) == []
    page.context.close()
