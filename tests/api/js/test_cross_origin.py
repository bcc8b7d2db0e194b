"""A page on another origin, in headless Chromium, calls Holdpoint with LangGraph's JS
SDK: its calls succeed when the server allows the page's origin, and the browser refuses
them ("Failed to fetch") when it does not, which is the default."""

from __future__ import annotations

import functools
import http.server
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.api.http_harness import listening_socket, running_server
from tests.api.js.js_sdk import browser_bundle, require_js_sdk
from tests.api.ui.browser import chromium, require_chromium

PAGE = """<!doctype html>
<meta charset="utf-8">
<title>Another origin</title>
<script src="langgraph-sdk.js"></script>
<script>
  window.callHoldpoint = async (apiUrl, apiKey) => {
    const client = new LangGraphClient({ apiUrl, apiKey, callerOptions: { maxRetries: 0 } });
    try {
      const thread = await client.threads.create({ metadata: { from: "browser" } });
      const found = await client.threads.search({ metadata: { from: "browser" } });
      return { ok: true, threadId: thread.thread_id, found: found.map((t) => t.thread_id) };
    } catch (error) {
      return { ok: false, error: String(error) };
    }
  };
</script>
"""


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *_: object) -> None:
        """The test reads the page's answers, not the server's log."""


@contextmanager
def page_origin(folder: Path) -> Iterator[str]:
    """A static web server for `folder`, on its own port: another origin than Holdpoint's."""
    sock = listening_socket()
    handler = functools.partial(QuietHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(sock.getsockname(), handler, bind_and_activate=False)
    server.socket.close()
    server.socket = sock
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def origin(tmp_path_factory):
    require_js_sdk()
    require_chromium()
    folder = tmp_path_factory.mktemp("page")
    browser_bundle(folder)
    (folder / "index.html").write_text(PAGE)
    with page_origin(folder) as url:
        yield url


@pytest.fixture(scope="module")
def page(origin):
    with chromium() as browser:
        opened = browser.new_page()
        opened.goto(f"{origin}/index.html")
        yield opened


def call_from_page(page, server) -> dict:
    return page.evaluate(
        "([url, key]) => window.callHoldpoint(url, key)", [server.url, server.keys["agent"]]
    )


def test_the_page_calls_a_server_that_allows_its_origin(tmp_path, origin, page):
    store = f"sqlite:///{tmp_path / 'holdpoint.db'}"
    with running_server(store, cors_allow_origins=[origin]) as server:
        answered = call_from_page(page, server)
    assert answered["ok"], answered
    assert answered["found"] == [answered["threadId"]]


def test_the_browser_refuses_the_page_a_server_that_does_not(tmp_path, origin, page):
    store = f"sqlite:///{tmp_path / 'holdpoint.db'}"
    with running_server(store, cors_allow_origins=["http://another.example"]) as server:
        before = server.head()
        answered = call_from_page(page, server)
        assert not answered["ok"]
        assert "Failed to fetch" in answered["error"]
        # And the refused preflight left nothing on record: no thread was created
        assert server.head() == before
    with running_server(f"sqlite:///{tmp_path / 'default.db'}") as default:
        assert not call_from_page(page, default)["ok"]
