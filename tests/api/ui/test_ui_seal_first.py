"""On a thread's page an admin may seal the log before downloading its evidence, as
`holdpoint seal` does with the server's seal key: the bundle downloaded after it proves
every event of the thread in the sealed log, where one downloaded before proved its
hash chain only. Others are not offered it, and are refused (on record) if they try."""

from __future__ import annotations

import os

import pytest

from domain.integrity.seal import SEAL_REGISTER_ID
from integrity.export import verify_bundle_file
from integrity.sealing import latest_seal
from integrity.signing import KEY_VARIABLE, generate_key
from tests.api.http_harness import running_server
from tests.api.ui.accessibility import accessible_context, axe_violations
from tests.api.ui.browser import sign_in
from tests.api.ui.story import paused
from tests.api.ui.ui_client import UiClient, csrf_of

if os.environ.get("CI", "").lower() != "true":  # in CI a missing Playwright fails collection
    pytest.importorskip("playwright")
from playwright.sync_api import expect


@pytest.fixture
def seal_key(tmp_path, monkeypatch):
    """The server's seal key, named by HOLDPOINT_SEAL_KEY."""
    path = tmp_path / "seal.key"
    generate_key(path)
    monkeypatch.setenv(KEY_VARIABLE, str(path))
    return path


@pytest.fixture
def fresh(tmp_path):
    with running_server(f"sqlite:///{tmp_path / 'holdpoint.db'}") as running:
        yield running


def signed_in(server, who):
    client = UiClient(server.url)
    assert client.sign_in(server.keys[who]).status_code == 303
    return client


def bundle_verdict(client, thread_id, tmp_path):
    """The thread's evidence bundle, downloaded from its page, as `verify --bundle` reads it."""
    token = csrf_of(client.get(f"/ui/threads/{thread_id}").text)
    download = client.post_form(f"/ui/threads/{thread_id}/evidence", {"csrf_token": token})
    assert download.status_code == 200, download.text
    path = tmp_path / f"bundle-{len(list(tmp_path.iterdir()))}.json"
    path.write_bytes(download.content)
    return verify_bundle_file(str(path), None)


def refusals(server):
    with server.http("auditor") as auditor:
        return auditor.get("/audit/refusals", params={"limit": 1000}).json()["data"]


def test_an_admin_seals_first_and_the_bundle_then_proves_every_event(fresh, seal_key, tmp_path):
    # Given a thread paused for a human in a store never sealed, on a server with a seal key
    thread_id, _ = paused(fresh)
    with signed_in(fresh, "admin") as admin:
        page = admin.get(f"/ui/threads/{thread_id}").text
        # Then the admin is offered to seal first, and a bundle now proves its chain only
        assert 'id="seal-now"' in page
        before = bundle_verdict(admin, thread_id, tmp_path)
        assert before.ok
        assert before.seal is None
        assert not before.covered

        # When the admin seals the log from the page
        token = csrf_of(page)
        sealed = admin.post_form(f"/ui/threads/{thread_id}/seal", {"csrf_token": token})

        # Then back on the thread's page, the seal is recorded in the store up to its head
        assert sealed.status_code == 303, sealed.text
        assert sealed.headers["location"] == f"/ui/threads/{thread_id}#chain"
        document = latest_seal(fresh.store)
        assert document is not None
        # And the seal's event names the admin who asked for it
        (*_, recorded) = fresh.store.events.get(SEAL_REGISTER_ID)
        assert recorded.actor["id"] == "admin"
        assert recorded.actor["role"] == "admin"
        after = admin.get(f"/ui/threads/{thread_id}").text
        assert f"Latest seal: positions 1 to {document['position']}" in after
        assert 'id="seal-now"' not in after  # nothing of this thread is left unsealed
        # And the bundle downloaded now proves every one of its events in the sealed log
        verdict = bundle_verdict(admin, thread_id, tmp_path)
        assert verdict.ok, verdict.problems
        assert verdict.covered
        assert verdict.unsealed_versions == []
        assert verdict.sealed == verdict.events == before.events


def test_only_an_admin_may_seal_and_only_with_the_pages_token(fresh, seal_key):
    # Given a thread in a store never sealed
    thread_id, _ = paused(fresh)
    with signed_in(fresh, "auditor") as auditor, signed_in(fresh, "admin") as admin:
        # Then an auditor is not offered to seal
        page = auditor.get(f"/ui/threads/{thread_id}").text
        assert 'id="seal-first"' not in page
        # When the auditor posts the form anyway
        refused = auditor.post_form(f"/ui/threads/{thread_id}/seal", {"csrf_token": csrf_of(page)})
        # Then it is refused, the refusal recorded, and nothing sealed
        assert refused.status_code == 403
        assert "only admin seals the log" in refused.text
        assert [(r["reason"], r["principal_id"]) for r in refusals(fresh)[-1:]] == [
            ("wrong_role", "auditor")
        ]
        # And an admin's post without the page's token is refused too
        forged = admin.post_form(f"/ui/threads/{thread_id}/seal", {"csrf_token": "forged"})
        assert forged.status_code == 403
        assert latest_seal(fresh.store) is None


def test_without_a_seal_key_the_page_says_how_to_seal(fresh, monkeypatch):
    # Given a server with no seal key
    monkeypatch.delenv(KEY_VARIABLE, raising=False)
    thread_id, _ = paused(fresh)
    with signed_in(fresh, "admin") as admin:
        page = admin.get(f"/ui/threads/{thread_id}").text
        # Then the admin is told to seal with the command, and offered no button
        assert "This server has no seal key" in page
        assert 'id="seal-now"' not in page
        # And a post says why nothing was sealed
        refused = admin.post_form(f"/ui/threads/{thread_id}/seal", {"csrf_token": csrf_of(page)})
        assert refused.status_code == 503
        assert "Nothing was sealed: no seal key" in refused.text
        assert latest_seal(fresh.store) is None


def test_in_chromium_an_admin_clicks_seal_and_the_page_names_the_seal(fresh, seal_key, browser):
    # Given an admin on the page of a thread in a store never sealed
    thread_id, _ = paused(fresh)
    page = accessible_context(browser).new_page()
    sign_in(page, fresh.url, fresh.keys["admin"], f"/ui/threads/{thread_id}")
    expect(page.locator("#seal-status")).to_contain_text("No seal yet")
    # Then axe-core finds nothing to fix on the page with its seal form
    assert axe_violations(page) == []
    # When they click to seal the log
    page.get_by_role("button", name="Seal the log now").click()
    # Then the page names the seal, and each event of the thread is sealed by it
    expect(page.locator("#seal-status")).to_contain_text("Latest seal: positions 1 to")
    expect(page.locator("#seal-now")).to_have_count(0)
    reach = page.locator("#timeline .seal-reach")
    expect(reach.first).to_contain_text("sealed by seal 1")
    assert all("sealed by seal 1" in text for text in reach.all_inner_texts())
    page.context.close()
