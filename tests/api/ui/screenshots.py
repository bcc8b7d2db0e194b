"""`make screenshots`: the browser UI over a scripted history, as PNGs in docs/screenshots/.

Runs a real server on a fresh SQLite store, tells the refund story through the
API (some refunds approved, one rejected, some waiting), and photographs the
inbox (and a search in it), a decision page, a middleware review's action cards, a
thread's audit page, the thread search, the oversight dashboard and one of its
drill-down lists in headless Chromium, as `tests/api/ui/test_ui_browser.py` drives it.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import structlog

from tests.api.http_harness import running_server
from tests.api.ui.browser import chromium, chromium_problem, sign_in
from tests.api.ui.story import MIDDLEWARE_REVIEW, decided, paused, scripted_history

OUT = Path(__file__).resolve().parents[3] / "docs" / "screenshots"
VIEWPORT = {"width": 1100, "height": 800}
log = structlog.get_logger()


def main() -> int:
    problem = chromium_problem()
    if problem is not None:
        log.error("cannot take screenshots", reason=problem)
        return 1
    OUT.mkdir(parents=True, exist_ok=True)
    with (
        tempfile.TemporaryDirectory() as folder,
        running_server(f"sqlite:///{Path(folder) / 'holdpoint.db'}") as server,
    ):
        scripted_history(server)
        _, open_interrupt = paused(
            server,
            graph="echo",
            values={
                "payload": {
                    "question": "Publish this reply to the customer?",
                    "draft": "Dear customer, we are sorry your parcel arrived late. "
                    "We have refunded the shipping cost of $12.50 to your card; it should "
                    "appear within five working days. Thank you for your patience.",
                    "customer": {"id": "C-20931", "tier": "gold"},
                }
            },
        )
        story_thread, story_interrupt = paused(server, values={"refund_amount": 480.0})
        decided(server, story_interrupt, "approve")
        _, review_interrupt = paused(server, graph="echo", values={"payload": MIDDLEWARE_REVIEW})
        with chromium() as browser:
            shots = {
                "inbox.png": ("reviewer", "/ui/inbox"),
                "decision.png": ("reviewer", f"/ui/approvals/{open_interrupt}"),
                "thread.png": ("auditor", f"/ui/threads/{story_thread}"),
                "dashboard.png": ("auditor", "/ui/dashboard"),
                "action-card.png": ("reviewer", f"/ui/approvals/{review_interrupt}"),
                "inbox-search.png": ("reviewer", "/ui/inbox?q=refund"),
                "search.png": ("auditor", "/ui/threads?graph_id=refund"),
                "drill-down.png": ("auditor", "/ui/dashboard/list?figure=decisions"),
            }
            for name, (who, path) in shots.items():
                context = browser.new_context(viewport=VIEWPORT, device_scale_factor=1)
                page = context.new_page()
                sign_in(page, server.url, server.keys[who], path.partition("?")[0])
                if "?" in path:
                    page.goto(f"{server.url}{path}")
                page.locator("main h1").wait_for()
                page.screenshot(path=str(OUT / name), full_page=True)
                context.close()
                log.info("screenshot written", path=str(OUT / name))
    return 0


if __name__ == "__main__":
    sys.exit(main())
