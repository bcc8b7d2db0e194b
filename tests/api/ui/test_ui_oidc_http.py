"""Signing in with OpenID Connect where it cannot be done: no provider configured, or one
that does not answer. The sign-in page says so; API keys still work."""

from __future__ import annotations

from tests.api.http_harness import listening_socket, running_server


def test_a_server_without_a_provider_offers_api_keys_only(server):
    with server.http(follow_redirects=False) as browser:
        page = browser.get("/ui/sign-in")
        start = browser.get("/ui/oidc/start")

    assert "Sign in with" not in page.text
    assert start.status_code == 404
    assert "signs in with API keys only" in start.text


def test_a_provider_that_does_not_answer_is_named_on_the_sign_in_page(tmp_path):
    # Given a provider configured at an address where nothing listens
    closed = listening_socket()
    issuer = f"http://127.0.0.1:{closed.getsockname()[1]}"
    closed.close()
    oidc = {
        "issuer": issuer,
        "client_id": "holdpoint",
        "redirect_url": "http://127.0.0.1:1/ui/oidc/callback",
        "name": "Example SSO",
    }
    with (
        running_server(f"sqlite:///{tmp_path / 'holdpoint.db'}", oidc=oidc) as server,
        server.http(follow_redirects=False) as browser,
    ):
        # When someone asks to sign in with it
        page = browser.get("/ui/sign-in")
        start = browser.get("/ui/oidc/start")

    # Then the sign-in page offers it, and then says it cannot be reached
    assert "Sign in with Example SSO" in page.text
    assert start.status_code == 502
    assert "Cannot sign in with Example SSO: The provider&#39;s discovery document" in start.text
    assert "did not answer" in start.text
