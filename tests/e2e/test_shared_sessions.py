"""A browser session and a reserved thread belong to the store, not to one process.

Two real `holdpoint serve` processes, A and B, on one SQLite file or one PostgreSQL
schema, with keys made by `holdpoint keys create`. The browser is httpx posting the
sign-in form, as tests/api/ui does; the key is revoked by `holdpoint keys revoke`, a
third process; A is stopped (SIGTERM) and started again on the same store.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from domain.access.identity import parse_key
from domain.record.store import open_store
from service.read_models import side_tables_for
from service.reservations import Reservations
from tests.api.http_harness import postgres_schema_url
from tests.api.ui.ui_client import UiClient, csrf_of
from tests.cli_process import holdpoint
from tests.e2e.test_crash_recovery import GRAPH, REFUND, make_key, serving

SESSION = "holdpoint_session"


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request, tmp_path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'holdpoint.db'}"
        return
    with postgres_schema_url() as url:
        yield url


@pytest.fixture
def graph(tmp_path) -> Path:
    path = tmp_path / "graph.py"
    path.write_text(GRAPH.format(folder=str(tmp_path)))
    return path


def signed_in(url: str, key: str) -> str:
    """Sign in on the server at `url` as a browser does; the session cookie."""
    with UiClient(url) as browser:
        answer = browser.sign_in(key)
        assert answer.status_code == 303, answer.text
        assert answer.headers["location"] == "/ui/inbox"
        return browser.cookies[SESSION]


def inbox(url: str, cookie: str) -> httpx.Response:
    """The inbox, asked for on `url` with the session cookie `cookie`."""
    with UiClient(url) as browser:
        browser.cookies[SESSION] = cookie
        return browser.get("/ui/inbox")


def works(url: str, cookie: str) -> bool:
    answer = inbox(url, cookie)
    if answer.status_code == 200:
        return True
    assert answer.status_code == 303, answer.text
    assert answer.headers["location"].startswith("/ui/sign-in?"), answer.headers
    return False


def sign_out(url: str, cookie: str) -> None:
    with UiClient(url) as browser:
        browser.cookies[SESSION] = cookie
        page = browser.get("/ui/inbox")
        answer = browser.post_form("/ui/sign-out", {"csrf_token": csrf_of(page.text)})
        assert answer.status_code == 303, answer.text
        assert SESSION not in browser.cookies


def api(url: str, key: str) -> httpx.Client:
    return httpx.Client(base_url=url, headers={"x-api-key": key}, timeout=60)


def test_a_ui_session_holds_on_every_server_until_signed_out_or_its_key_revoked(store_url, graph):
    rita = make_key(store_url, "rita", "reviewer")
    rob = make_key(store_url, "rob", "reviewer")
    with serving(store_url, graph) as (a, url_a), serving(store_url, graph) as (_, url_b):
        # Given a reviewer signed in on A, their cookie works on B
        first = signed_in(url_a, rita)
        assert works(url_b, first)

        # When they sign out on B, A refuses the cookie too
        sign_out(url_b, first)
        assert not works(url_a, first)

        # Given sessions of rita's key, one used on each server, and one of rob's
        on_a, on_b, robs = signed_in(url_a, rita), signed_in(url_b, rita), signed_in(url_b, rob)
        assert works(url_a, on_a)
        assert works(url_b, on_b)

        # When rita's key is revoked, by another process
        revoked = holdpoint(store_url, "keys", "revoke", parse_key(rita)[0])
        assert revoked.returncode == 0, revoked.stderr

        # Then each server refuses her session at its next page, saying why
        for url, cookie in ((url_a, on_a), (url_b, on_b)):
            answer = inbox(url, cookie)
            assert answer.status_code == 303
            assert "revoked" in answer.headers["location"]
            assert not works(url_a, cookie)
            assert not works(url_b, cookie)
        # And rob's session works on both
        assert works(url_a, robs)
        assert works(url_b, robs)

        # When A restarts on the same store
        a.stop()
        with serving(store_url, graph) as (_, url_a_again):
            # Then rob's session still works there, without signing in again
            assert works(url_a_again, robs)


def test_a_thread_reserved_on_one_server_is_served_and_run_by_another(store_url, graph):
    agent = make_key(store_url, "amy", "agent")
    with serving(store_url, graph) as (a, url_a), serving(store_url, graph) as (_, url_b):
        # Given a thread created on A without a graph (reserved, nothing recorded)
        with api(url_a, agent) as on_a, api(url_b, agent) as on_b:
            created = on_a.post("/threads", json={"metadata": {"case": "shared"}})
            assert created.status_code == 200, created.text
            thread_id = created.json()["thread_id"]

            # Then B knows it, with its metadata
            seen = on_b.get(f"/threads/{thread_id}")
            assert seen.status_code == 200, seen.text
            assert (seen.json()["status"], seen.json()["metadata"]) == ("idle", {"case": "shared"})
            assert on_b.get(f"/threads/{thread_id}/state").status_code == 200

            # When B runs it
            ran = on_b.post(
                f"/threads/{thread_id}/runs/wait", json={"assistant_id": "crash", "input": REFUND}
            )
            assert ran.status_code == 200, ran.text
            assert ran.json()["__interrupt__"]

            # Then it is recorded with its metadata, the reservation is gone, and A
            # finds the thread once
            thread = on_a.get(f"/threads/{thread_id}").json()
            assert (thread["status"], thread["metadata"]["case"]) == ("interrupted", "shared")
            found = on_a.post("/threads/search", json={"metadata": {"case": "shared"}}).json()
            assert [t["thread_id"] for t in found] == [thread_id]
            with open_store(store_url) as store:
                reservations = Reservations(side_tables_for(store))
                assert reservations.get(thread_id) is None
                reservations.db.close()

            # Given another thread reserved on B
            later = on_b.post("/threads", json={"metadata": {"case": "restart"}}).json()

        # When A restarts
        a.stop()
        with serving(store_url, graph) as (_, url_a_again), api(url_a_again, agent) as on_a:
            # Then A still serves it
            seen = on_a.get(f"/threads/{later['thread_id']}")
            assert seen.status_code == 200, seen.text
            assert seen.json()["metadata"] == {"case": "restart"}
