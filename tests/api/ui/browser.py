"""Headless Chromium for the UI tests and the screenshots: Debian's `chromium`, driven by
Playwright (its own browser download is not used). Without it the browser tests skip
with the reason, except in CI (CI=true), where they fail: CI must run them."""

from __future__ import annotations

import importlib.util
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tests.ci import missing

CHROMIUM = os.environ.get("HOLDPOINT_CHROMIUM", "/usr/bin/chromium")


def chromium_problem() -> str | None:
    """Why the browser tests cannot run here, or None when they can."""
    if importlib.util.find_spec("playwright") is None:
        return "Playwright is not installed: `.venv/bin/pip install -e '.[dev]'`"
    if not (os.path.exists(CHROMIUM) or shutil.which(CHROMIUM)):
        return (
            f"no Chromium at {CHROMIUM} (HOLDPOINT_CHROMIUM): `apt-get install -y chromium "
            "chromium-driver` (as .ci/run does), or point the variable at one"
        )
    return None


def require_chromium() -> None:
    problem = chromium_problem()
    if problem is None:
        return
    missing("the browser tests", problem)


@contextmanager
def chromium() -> Iterator[Any]:
    """A headless Chromium browser (Playwright's `Browser`)."""
    from playwright.sync_api import sync_playwright  # noqa: PLC0415 - only where it runs

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            args=["--no-sandbox", "--disable-dev-shm-usage"],
        )
        try:
            yield browser
        finally:
            browser.close()


def sign_in(page: Any, base_url: str, key: str, next_page: str = "/ui/inbox") -> None:
    """Sign in through the form, as a person would, and land on `next_page`."""
    page.goto(f"{base_url}/ui/sign-in?next={next_page}")
    page.get_by_label("API key").fill(key)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"{base_url}{next_page}*")


def horizontal_overflow(page: Any) -> int:
    """How many CSS pixels the page is wider than its viewport (0: none)."""
    return int(
        page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
    )
