"""The ID token's checks: the signature against the provider's published keys, the issuer,
the audience, the times and the nonce, each refused with the reason.

The provider here is a keypair of the test's and its two public documents (discovery and
JWKS) served through httpx's MockTransport: what is under test is what the client
accepts, with tokens a real provider would never sign. The whole flow against a real
provider is tests/api/ui/test_ui_oidc_browser.py.
"""

from __future__ import annotations

import json
import time

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from service.oidc_client import OidcClient, SignInError, pkce_pair
from service.oidc_settings import oidc_settings

ISSUER = "https://login.example.com"
SETTINGS = oidc_settings(
    {
        "issuer": ISSUER,
        "client_id": "holdpoint",
        "redirect_url": "https://hp.example.com/ui/oidc/callback",
    },
    environ={},
)
KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
OTHER_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)


def published(key) -> dict:
    jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
    return {**jwk, "kid": "key-1", "use": "sig", "alg": "RS256"}


def provider(request: httpx.Request) -> httpx.Response:
    if request.url.path == "/.well-known/openid-configuration":
        return httpx.Response(
            200,
            json={
                "issuer": ISSUER,
                "authorization_endpoint": f"{ISSUER}/auth",
                "token_endpoint": f"{ISSUER}/token",
                "jwks_uri": f"{ISSUER}/jwks",
            },
        )
    if request.url.path == "/jwks":
        return httpx.Response(200, json={"keys": [published(KEY)]})
    return httpx.Response(404)


@pytest.fixture
def client():
    made = OidcClient(SETTINGS, httpx.Client(transport=httpx.MockTransport(provider)))
    yield made
    made.close()


def token(key=KEY, headers=None, **changes) -> str:
    now = int(time.time())
    claims = {
        "iss": ISSUER,
        "aud": "holdpoint",
        "sub": "olga",
        "iat": now,
        "exp": now + 300,
        "nonce": "the-nonce",
        **changes,
    }
    claims = {k: v for k, v in claims.items() if v is not None}
    return jwt.encode(claims, key, algorithm="RS256", headers={"kid": "key-1", **(headers or {})})


def test_a_token_signed_by_the_provider_for_this_sign_in_is_accepted(client):
    claims = client.verify_id_token(token(role="reviewer"), "the-nonce")

    assert (claims["sub"], claims["role"]) == ("olga", "reviewer")


@pytest.mark.parametrize(
    ("forged", "says"),
    [
        (lambda: token(key=OTHER_KEY), "Signature verification failed"),
        (lambda: token(iss="https://evil.example"), "Invalid issuer"),
        (lambda: token(aud="another-client"), "Audience doesn't match"),
        (lambda: token(exp=int(time.time()) - 3600), "Signature has expired"),
        (lambda: token(exp=None), 'Token is missing the "exp" claim'),
        (lambda: token(nonce="another-sign-ins-nonce"), "nonce is not this sign-in's"),
        (lambda: token(nonce=None), "nonce is not this sign-in's"),
        (lambda: token(aud=["holdpoint", "another"]), "is not for this client"),
        (lambda: token(headers={"kid": "unknown"}), "a key the provider does not publish"),
        (
            lambda: jwt.encode({"iss": ISSUER, "aud": "holdpoint"}, "s" * 32, algorithm="HS256"),
            "signed with 'HS256', which is not accepted",
        ),
        (lambda: "not.a.token", "The ID token is not a JWT"),
    ],
)
def test_a_token_that_fails_a_check_is_refused_saying_which(client, forged, says):
    with pytest.raises(SignInError) as raised:
        client.verify_id_token(forged(), "the-nonce")

    assert says in str(raised.value)


def test_the_authorization_request_carries_state_nonce_and_an_s256_challenge(client):
    verifier, challenge = pkce_pair()

    url = httpx.URL(client.authorization_url("the-state", "the-nonce", challenge))

    assert url.path == "/auth"
    assert dict(url.params) == {
        "response_type": "code",
        "client_id": "holdpoint",
        "redirect_uri": "https://hp.example.com/ui/oidc/callback",
        "scope": "openid profile",
        "state": "the-state",
        "nonce": "the-nonce",
        "code_challenge": challenge,
        "code_challenge_method": "S256",
    }
    assert verifier != challenge


def test_a_discovery_document_of_another_issuer_is_refused():
    def elsewhere(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"issuer": "https://evil.example"})

    client = OidcClient(SETTINGS, httpx.Client(transport=httpx.MockTransport(elsewhere)))

    with pytest.raises(SignInError, match=r"names the issuer 'https://evil\.example'"):
        client.metadata()
