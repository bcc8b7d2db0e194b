"""A browser-like HTTP client for the UI tests: it keeps cookies the way a browser does
on localhost, Secure ones included (httpx sends Secure cookies over HTTPS only)."""

from __future__ import annotations

import re
from http.cookies import SimpleCookie
from typing import Any

import httpx

CSRF = re.compile(r'name="csrf_token" value="([^"]*)"')
IDEMPOTENCY = re.compile(r'name="idempotency_key" value="([^"]*)"')


class UiClient:
    def __init__(self, base_url: str) -> None:
        self.http = httpx.Client(base_url=base_url, timeout=60, follow_redirects=False)
        self.cookies: dict[str, str] = {}
        self.set_cookies: list[str] = []  # every Set-Cookie header seen, as sent

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> UiClient:
        return self

    def __exit__(self, *_: Any) -> None:
        self.close()

    def request(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        headers = dict(kwargs.pop("headers", None) or {})
        if self.cookies:
            headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        response = self.http.request(method, url, headers=headers, **kwargs)
        for header in response.headers.get_list("set-cookie"):
            self.set_cookies.append(header)
            cookie = SimpleCookie()
            cookie.load(header)
            for name, morsel in cookie.items():
                if morsel["max-age"] == "0" or not morsel.value:
                    self.cookies.pop(name, None)
                else:
                    self.cookies[name] = morsel.value
        return response

    def get(self, url: str, **kwargs: Any) -> httpx.Response:
        return self.request("GET", url, **kwargs)

    def post_form(self, url: str, fields: dict[str, str], **kwargs: Any) -> httpx.Response:
        return self.request("POST", url, data=fields, **kwargs)

    def sign_in(self, key: str) -> httpx.Response:
        page = self.get("/ui/sign-in")
        token = csrf_of(page.text)
        return self.post_form("/ui/sign-in", {"csrf_token": token, "api_key": key})


def csrf_of(html: str) -> str:
    match = CSRF.search(html)
    assert match, "the page has a form with a CSRF token"
    return match.group(1)


def idempotency_key_of(html: str) -> str:
    match = IDEMPOTENCY.search(html)
    assert match, "the decision form has an idempotency key"
    return match.group(1)
