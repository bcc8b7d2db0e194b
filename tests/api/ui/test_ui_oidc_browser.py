"""Signing in with OpenID Connect, end to end: a real provider (panva's oidc-provider, run
by Node on localhost), a real server on 127.0.0.1 (another site, as in production) and
a real Chromium, going through the provider's own login page.

Waits are on the page's DOM (Playwright's auto-waiting `expect`), never on time.
"""

from __future__ import annotations

import os
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest

from tests.api.http_harness import listening_socket, running_server
from tests.api.ui.accessibility import accessible_context, axe_violations
from tests.api.ui.oidc_provider import CLIENT_ID, CLIENT_SECRET, oidc_provider, require_provider
from tests.api.ui.story import paused

if os.environ.get("CI", "").lower() != "true":  # in CI a missing Playwright fails collection
    pytest.importorskip("playwright")
from playwright.sync_api import expect

PROVIDER = "Test provider"
USERS = {
    "olga": {"role": "reviewer"},
    "agnes": {"role": "agent"},  # a role that may not sign in to the UI
    "nobody": {},  # no role claim at all
}


@pytest.fixture(scope="module")
def oidc_server(tmp_path_factory):
    require_provider()
    sock = listening_socket()
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    folder = tmp_path_factory.mktemp("oidc-store")
    with (
        pytest.MonkeyPatch.context() as env,
        oidc_provider(url, USERS) as issuer,
    ):
        env.setenv("TEST_OIDC_CLIENT_SECRET", CLIENT_SECRET)
        oidc = {
            "issuer": issuer,
            "client_id": CLIENT_ID,
            "client_secret_env": "TEST_OIDC_CLIENT_SECRET",
            "redirect_url": f"{url}/ui/oidc/callback",
            "scopes": ["openid", "profile", "holdpoint"],
            "principal_claim": "preferred_username",
            "role_claim": "role",
            "allowed_roles": ["reviewer", "auditor", "admin"],
            "name": PROVIDER,
        }
        with running_server(f"sqlite:///{folder / 'holdpoint.db'}", sock=sock, oidc=oidc) as server:
            yield server


def refusals(server):
    with server.http("auditor") as auditor:
        return auditor.get("/audit/refusals", params={"limit": 1000}).json()["data"]


def through_provider(page, server, login, next_page="/ui/inbox"):
    """From the sign-in page, through the provider's own login page, back to Holdpoint."""
    page.goto(f"{server.url}/ui/sign-in?next={next_page}")
    page.get_by_role("link", name=f"Sign in with {PROVIDER}").click()
    page.locator("input[name=login]").fill(login)
    page.locator("input[name=password]").fill("any password")
    page.get_by_role("button", name="Sign-in").click()


def test_a_reviewer_signs_in_with_the_provider_decides_and_signs_out(oidc_server, context, page):
    server = oidc_server
    thread_id, interrupt_id = paused(server, graph="echo", values={"payload": {"note": "x"}})

    # When a reviewer signs in at the provider
    through_provider(page, server, "olga", f"/ui/approvals/{interrupt_id}")

    # Then they see the page they asked for, as the principal and role of their claims
    page.wait_for_url(f"{server.url}/ui/approvals/{interrupt_id}")
    expect(page.locator("#signed-in-as")).to_have_text("olga (reviewer)")
    (session,) = [c for c in context.cookies() if c["name"] == "holdpoint_session"]
    # And the inbox is theirs too
    page.goto(f"{server.url}/ui/inbox")
    expect(page.locator(f'[data-interrupt="{interrupt_id}"]')).to_be_visible()

    # When they approve the interrupt
    page.goto(f"{server.url}/ui/approvals/{interrupt_id}")
    with page.expect_navigation():
        page.get_by_role("button", name="Approve", exact=True).click()

    # Then the decision names them, their role, and how and where they signed in
    with server.http("auditor") as auditor:
        audit = auditor.get(f"/threads/{thread_id}/audit").json()
    (resumed,) = [e for e in audit["entries"] if e["event"] == "InterruptResumed"]
    assert resumed["actor"] == {
        "id": "olga",
        "role": "reviewer",
        "authenticated": True,
        "via": "oidc",
        "issuer": server.services.settings.oidc.issuer,
    }
    assert resumed["details"]["decision"] == "approve"

    # When they sign out
    page.get_by_role("button", name="Sign out", exact=True).click()

    # Then they are signed out, and offered to sign out at the provider too
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    assert [c for c in context.cookies() if c["name"] == "holdpoint_session"] == []
    # When they do (RP-initiated logout), and confirm it at the provider
    page.get_by_role("link", name=f"sign out of {PROVIDER} too").click()
    page.get_by_role("button", name="Yes, sign me out").click()

    # Then they are back, signed out of both
    expect(page.locator(".notice")).to_have_text(
        f"You are signed out of Holdpoint and of {PROVIDER}."
    )
    # And signing in again asks the provider for their login again
    page.get_by_role("link", name=f"Sign in with {PROVIDER}").click()
    expect(page.locator("input[name=login]")).to_be_visible()
    # And the old cookie, put back, opens nothing: the session ended in the store
    context.add_cookies([session])
    page.goto(f"{server.url}/ui/inbox")
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()


def test_end_all_my_sessions_ends_the_other_browsers_session_too(oidc_server, browser):
    server = oidc_server
    # Given the same reviewer signed in in two browsers
    first, second = browser.new_context().new_page(), browser.new_context().new_page()
    for page in (first, second):
        through_provider(page, server, "olga")
        expect(page.locator("#signed-in-as")).to_have_text("olga (reviewer)")

    # When they end all their sessions in the first
    first.get_by_role("button", name="End all my sessions").click()

    # Then the second is signed out at its next request
    expect(first.locator(".notice")).to_contain_text("You are signed out of")
    second.goto(f"{server.url}/ui/inbox")
    expect(second.get_by_role("heading", name="Sign in")).to_be_visible()
    first.context.close()
    second.context.close()


@pytest.mark.parametrize(
    ("login", "says"),
    [
        ("agnes", "their 'role' claim ('agent') gives no role allowed here"),
        ("nobody", "has no 'role' claim to give a role"),
    ],
)
def test_a_role_not_allowed_is_refused_on_the_sign_in_page_and_recorded(
    oidc_server, page, login, says
):
    server = oidc_server
    before = len(refusals(server))

    # When someone whose claims give no allowed role signs in at the provider
    through_provider(page, server, login)

    # Then the sign-in page says why, and no session is open
    expect(page.locator("#sign-in-error")).to_contain_text(says)
    assert not [c for c in page.context.cookies() if c["name"] == "holdpoint_session"]
    # And the refusal is on record
    recorded = refusals(server)[before:]
    assert [(r["reason"], r["action"]) for r in recorded] == [
        ("wrong_role", "GET /ui/oidc/callback")
    ]


def at(path):
    """A URL matcher for Playwright: the server's page at `path`, whatever its query."""
    return lambda url: urlsplit(url).path == path


def test_an_answer_with_another_browsers_state_is_refused_and_recorded(oidc_server, page):
    server = oidc_server
    before = len(refusals(server))
    # Given a sign-in begun in this browser, now at the provider's login page
    page.goto(f"{server.url}/ui/sign-in")
    page.get_by_role("link", name=f"Sign in with {PROVIDER}").click()
    expect(page.locator("input[name=login]")).to_be_visible()
    # And the state this browser keeps swapped for another (a sign-in begun elsewhere)
    (state,) = [c for c in page.context.cookies() if c["name"] == "holdpoint_oidc_state"]
    page.context.add_cookies([{**state, "value": "a-state-begun-in-another-browser"}])

    # When the provider answers with the state it was sent
    page.locator("input[name=login]").fill("olga")
    page.locator("input[name=password]").fill("any password")
    page.get_by_role("button", name="Sign-in").click()

    # Then the sign-in is refused, saying why, and no session is open
    expect(page.locator("#sign-in-error")).to_contain_text(
        "does not carry the state this browser's sign-in began with"
    )
    assert not [c for c in page.context.cookies() if c["name"] == "holdpoint_session"]
    recorded = refusals(server)[before:]
    assert [(r["reason"], r["action"]) for r in recorded] == [
        ("sign_in_refused", "GET /ui/oidc/callback")
    ]


def test_a_tampered_state_or_a_replayed_answer_is_refused(oidc_server):
    server = oidc_server
    with server.http(follow_redirects=False) as browser:
        # Given a sign-in begun, and the state it sent to the provider
        start = browser.get("/ui/oidc/start")
        assert start.status_code == 303
        sent = parse_qs(urlsplit(start.headers["location"]).query)
        assert sent["code_challenge_method"] == ["S256"]
        assert len(sent["code_challenge"][0]) == 43
        assert sent["nonce"][0]
        state = sent["state"][0]

        # When an answer comes back with the state changed
        forged = browser.get(f"/ui/oidc/callback?{urlencode({'code': 'x', 'state': state + 'x'})}")
        # Then it is refused, before the provider is asked anything
        assert forged.status_code == 401
        assert "does not carry the state" in forged.text

        # When the answer with the right state (the refusal ended the attempt in this
        # browser: its state is put back) but a made-up code comes
        browser.cookies.set("holdpoint_oidc_state", state, path="/ui/oidc")
        made_up = browser.get(f"/ui/oidc/callback?{urlencode({'code': 'x', 'state': state})}")
        # Then the provider refuses the code, and the page says so
        assert made_up.status_code == 401
        assert "The provider refused the code" in made_up.text

        # And the same state once more finds no sign-in: each is used once
        browser.cookies.set("holdpoint_oidc_state", state, path="/ui/oidc")
        again = browser.get(f"/ui/oidc/callback?{urlencode({'code': 'x', 'state': state})}")
        assert again.status_code == 401
        assert "expired or was used already" in again.text


@pytest.mark.parametrize("where", ["sign-in", "refusal", "signed-in"])
def test_axe_core_finds_no_wcag_violation_on_the_sign_in_pages(oidc_server, browser, where):
    server = oidc_server
    context = accessible_context(browser)
    page = context.new_page()
    if where == "sign-in":  # with the provider's button, and its sign-out offer
        page.goto(f"{server.url}/ui/sign-in?provider=yes&message=You+are+signed+out.")
        expect(page.get_by_role("link", name=f"Sign in with {PROVIDER}")).to_be_visible()
    elif where == "refusal":
        through_provider(page, server, "agnes")
        expect(page.locator("#sign-in-error")).to_be_visible()
    else:  # the page between the provider and the page asked for, held there
        page.route(at("/ui/inbox"), lambda route: route.fulfill(status=204))
        through_provider(page, server, "olga")
        expect(page.get_by_role("heading", name="Signed in")).to_be_visible()

    # Then axe-core finds nothing against WCAG 2.0 and 2.1, A and AA
    assert axe_violations(page) == []
    context.close()


def test_a_sign_in_begun_on_one_server_process_ends_on_another_and_signs_out_everywhere(
    oidc_server, page
):
    # Given a second server process on the same store, with the same provider
    first = oidc_server
    settings = first.services.settings
    with running_server(settings.store_url, oidc=settings.oidc) as second:
        # When the sign-in begins on the second, and the provider answers the first
        page.goto(f"{second.url}/ui/sign-in")
        page.get_by_role("link", name=f"Sign in with {PROVIDER}").click()
        page.locator("input[name=login]").fill("olga")
        page.locator("input[name=password]").fill("any password")
        page.get_by_role("button", name="Sign-in").click()

        # Then the first finds the sign-in in the store and signs her in
        page.wait_for_url(f"{first.url}/ui/inbox")
        expect(page.locator("#signed-in-as")).to_have_text("olga (reviewer)")
        # And the second knows her session too
        page.goto(f"{second.url}/ui/inbox")
        expect(page.locator("#signed-in-as")).to_have_text("olga (reviewer)")

        # When she signs out on the second
        page.get_by_role("button", name="Sign out", exact=True).click()
        expect(page.get_by_role("heading", name="Sign in")).to_be_visible()

        # Then the first has signed her out as well
        page.goto(f"{first.url}/ui/inbox")
        expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
