"""A real server (uvicorn, SQLite store) and, for the browser tests, headless Chromium."""

from __future__ import annotations

import pytest

from tests.api.http_harness import running_server
from tests.api.ui.browser import chromium, require_chromium


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ui-store")
    with running_server(f"sqlite:///{folder / 'holdpoint.db'}") as running:
        yield running


@pytest.fixture(scope="module")
def browser():
    require_chromium()
    from playwright.sync_api import expect  # noqa: PLC0415 - only once Chromium is there

    # A shared two-core machine: DOM conditions get 15 s to come true, not 5
    expect.set_options(timeout=15_000)
    with chromium() as launched:
        yield launched


@pytest.fixture
def context(browser):
    opened = browser.new_context(viewport={"width": 1100, "height": 900})
    opened.set_default_timeout(15_000)
    yield opened
    opened.close()


@pytest.fixture
def page(context):
    return context.new_page()
