"""The UI's OpenID Connect client: discovery, the code exchange, and the ID token's checks.

The authorization code flow with PKCE (S256): the browser goes to the provider's
authorization endpoint with `state`, `nonce` and a code challenge; its answer comes
back to the callback with a code, exchanged here (with the verifier) at the token
endpoint, over the back channel. The ID token is then checked with PyJWT: its
signature against the provider's published keys (JWKS), `iss`, `aud` (and `azp`),
`exp`, `iat` and the `nonce` of this sign-in. HTTP goes through httpx.

The provider's metadata and keys are public and change rarely: each process keeps
them for `METADATA_SECONDS`, and fetches the keys again, once, for a token signed
with a key it does not know yet (a rotation).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import threading
import time
from typing import Any
from urllib.parse import quote_plus, urlencode

import httpx
import jwt

from service.oidc_settings import OidcSettings

METADATA_SECONDS = 3600.0
HTTP_TIMEOUT = 10.0
LEEWAY_SECONDS = 60  # clock skew tolerated between the provider and this server
# Asymmetric algorithms only: a token "signed" with `none` or with the client secret as
# an HMAC key is refused.
ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "EdDSA")


class SignInError(Exception):
    """The provider's answer cannot sign anyone in; the message says why, for the page."""


def pkce_pair() -> tuple[str, str]:
    """A PKCE verifier and its S256 challenge (RFC 7636)."""
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode()).digest()
    return verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


class OidcClient:
    """One provider, as configured; safe to share between threads."""

    def __init__(self, settings: OidcSettings, http: httpx.Client | None = None) -> None:
        self.settings = settings
        self._http = http or httpx.Client(timeout=HTTP_TIMEOUT, follow_redirects=False)
        self._lock = threading.Lock()
        self._metadata: tuple[float, dict[str, Any]] | None = None
        self._keys: tuple[float, jwt.PyJWKSet] | None = None

    def metadata(self) -> dict[str, Any]:
        """The provider's discovery document (`/.well-known/openid-configuration`)."""
        with self._lock:
            if self._metadata is not None and time.monotonic() < self._metadata[0]:
                return self._metadata[1]
        url = self.settings.issuer.rstrip("/") + "/.well-known/openid-configuration"
        document = self._get_json(url, "discovery document")
        if document.get("issuer") != self.settings.issuer:
            msg = (
                f"The provider's discovery document names the issuer {document.get('issuer')!r}, "
                f"not {self.settings.issuer!r} as configured (oidc.issuer)"
            )
            raise SignInError(msg)
        for name in ("authorization_endpoint", "token_endpoint", "jwks_uri"):
            if not isinstance(document.get(name), str):
                raise SignInError(f"The provider's discovery document has no {name}")
        with self._lock:
            self._metadata = (time.monotonic() + METADATA_SECONDS, document)
        return document

    def authorization_url(self, state: str, nonce: str, challenge: str) -> str:
        query = {
            "response_type": "code",
            "client_id": self.settings.client_id,
            "redirect_uri": self.settings.redirect_url,
            "scope": " ".join(self.settings.scopes),
            "state": state,
            "nonce": nonce,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
        }
        return f"{self.metadata()['authorization_endpoint']}?{urlencode(query)}"

    def end_session_url(self) -> str | None:
        """Where to sign out at the provider too (RP-initiated logout), if it says."""
        try:
            endpoint = self.metadata().get("end_session_endpoint")
        except SignInError:
            return None
        if not isinstance(endpoint, str):
            return None
        query = {
            "client_id": self.settings.client_id,
            "post_logout_redirect_uri": self.settings.signed_out_url,
        }
        return f"{endpoint}?{urlencode(query)}"

    def sign_in(self, code: str, verifier: str, nonce: str) -> dict[str, Any]:
        """The claims of the ID token the code is exchanged for, checked."""
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": self.settings.redirect_url,
            "code_verifier": verifier,
        }
        headers = {}
        secret = self.settings.client_secret
        if secret is None:  # a public client names itself
            form["client_id"] = self.settings.client_id
        else:  # client_secret_basic: each part form-encoded first (RFC 6749, 2.3.1)
            pair = f"{quote_plus(self.settings.client_id)}:{quote_plus(secret)}"
            headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
        try:
            response = self._http.post(
                self.metadata()["token_endpoint"], data=form, headers=headers
            )
        except httpx.HTTPError as error:
            raise SignInError(f"The provider's token endpoint did not answer: {error}") from None
        body = _json_of(response)
        if response.status_code != 200:
            why = body.get("error_description") or body.get("error") or response.status_code
            raise SignInError(f"The provider refused the code: {why}")
        id_token = body.get("id_token")
        if not isinstance(id_token, str):
            raise SignInError("The provider's answer has no ID token")
        return self.verify_id_token(id_token, nonce)

    def verify_id_token(self, id_token: str, nonce: str) -> dict[str, Any]:
        """The ID token's claims, once its signature, issuer, audience, times and nonce
        are checked; SignInError naming the first that fails."""
        try:
            header = jwt.get_unverified_header(id_token)
        except jwt.PyJWTError as error:
            raise SignInError(f"The ID token is not a JWT: {error}") from None
        algorithm = header.get("alg")
        if algorithm not in ALGORITHMS:
            raise SignInError(f"The ID token is signed with {algorithm!r}, which is not accepted")
        key = self._signing_key(header.get("kid"))
        try:
            claims: dict[str, Any] = jwt.decode(
                id_token,
                key,
                algorithms=[algorithm],
                audience=self.settings.client_id,
                issuer=self.settings.issuer,
                leeway=LEEWAY_SECONDS,
                options={"require": ["iss", "aud", "exp", "iat", "sub"]},
            )
        except jwt.PyJWTError as error:
            raise SignInError(f"The ID token is not valid: {error}") from None
        audiences = claims["aud"] if isinstance(claims["aud"], list) else [claims["aud"]]
        if len(audiences) > 1 and claims.get("azp") != self.settings.client_id:
            raise SignInError("The ID token names other audiences and is not for this client")
        if not hmac.compare_digest(str(claims.get("nonce", "")).encode(), nonce.encode()):
            raise SignInError("The ID token's nonce is not this sign-in's: a replayed token")
        return claims

    def close(self) -> None:
        self._http.close()

    def _signing_key(self, kid: Any) -> jwt.PyJWK:
        for fresh in (False, True):
            keys = self._key_set(fresh)
            matching = [k for k in keys.keys if kid is None or k.key_id == kid]
            if len(matching) == 1 or (matching and kid is not None):
                return matching[0]
        raise SignInError(f"The ID token is signed with a key the provider does not publish: {kid}")

    def _key_set(self, fresh: bool) -> jwt.PyJWKSet:
        with self._lock:
            if not fresh and self._keys is not None and time.monotonic() < self._keys[0]:
                return self._keys[1]
        document = self._get_json(self.metadata()["jwks_uri"], "keys (JWKS)")
        try:
            keys = jwt.PyJWKSet.from_dict(document)
        except jwt.PyJWTError as error:
            raise SignInError(f"The provider's keys (JWKS) cannot be read: {error}") from None
        with self._lock:
            self._keys = (time.monotonic() + METADATA_SECONDS, keys)
        return keys

    def _get_json(self, url: str, what: str) -> dict[str, Any]:
        try:
            response = self._http.get(url)
        except httpx.HTTPError as error:
            raise SignInError(f"The provider's {what} at {url} did not answer: {error}") from None
        if response.status_code != 200:
            raise SignInError(f"The provider's {what} at {url} answered {response.status_code}")
        return _json_of(response)


def _json_of(response: httpx.Response) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}
