"""A real OpenID Connect provider for the sign-in tests: panva's `oidc-provider`, pinned in
tests/js (`npm ci --prefix tests/js`), run by tests/js/oidc_provider.mjs on localhost.
Without Node.js or the package the tests skip with the reason, except in CI (CI=true),
where they fail: CI must run them."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.ci import missing

JS = Path(__file__).parents[2] / "js"
SCRIPT = JS / "oidc_provider.mjs"
CLIENT_ID = "holdpoint-ui"
CLIENT_SECRET = "a-test-client-secret-of-the-local-provider"


def require_provider() -> str:
    node = shutil.which("node")
    if node is None:
        missing("the OpenID Connect sign-in tests", "no node: `apt-get install nodejs npm`")
    if not (JS / "node_modules" / "oidc-provider").exists():
        missing("the OpenID Connect sign-in tests", "no oidc-provider: `npm ci --prefix tests/js`")
    return str(node)


@contextmanager
def oidc_provider(server_url: str, users: dict[str, dict[str, Any]]) -> Iterator[str]:
    """A provider whose client signs in to the UI at `server_url`, with `users` (login ->
    claims, e.g. {"role": "reviewer"}); its issuer URL, while it runs."""
    config = {
        "client_id": CLIENT_ID,
        "client_secret": CLIENT_SECRET,
        "redirect_uri": f"{server_url}/ui/oidc/callback",
        "post_logout_redirect_uri": f"{server_url}/ui/signed-out",
        "users": users,
    }
    process = subprocess.Popen(
        [require_provider(), str(SCRIPT), json.dumps(config)],
        cwd=JS,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()  # once it serves, or "" if it died
        if not line:
            raise RuntimeError(f"the OIDC provider did not start (exit {process.wait()})")
        yield str(json.loads(line)["issuer"])
    finally:
        process.terminate()
        process.wait(timeout=30)
