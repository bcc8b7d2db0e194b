"""LangGraph's JS SDK from npm (pinned in tests/js/package.json), for the tests that
drive Holdpoint from Node and from a browser page. `.ci/run` installs it (`npm ci
--prefix tests/js`); without it these tests skip with the reason, except in CI (CI=true),
where they fail."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

from tests.ci import missing

PACKAGE = Path(__file__).resolve().parents[2] / "js"
SDK = PACKAGE / "node_modules" / "@langchain" / "langgraph-sdk"
ESBUILD = PACKAGE / "node_modules" / ".bin" / "esbuild"
NODE_SECONDS = 120


def require_js_sdk() -> str:
    """The `node` to run the SDK with (skip, or in CI fail, when it or the SDK is missing)."""
    node = shutil.which("node")
    if node is None:
        missing("the JS SDK tests", "no `node` on the PATH: install Node.js 20 or later")
    if not SDK.is_dir() or not ESBUILD.exists():
        missing("the JS SDK tests", f"the JS SDK is not installed: `npm ci --prefix {PACKAGE}`")
    return node


def run_script(script: str, environment: dict[str, str]) -> Any:
    """Run `tests/js/<script>` under Node and return the JSON it printed last."""
    node = require_js_sdk()
    finished = subprocess.run(
        [node, str(PACKAGE / script)],
        env={**os.environ, **environment},
        capture_output=True,
        text=True,
        timeout=NODE_SECONDS,
        check=False,
    )
    assert finished.returncode == 0, finished.stderr
    return json.loads(finished.stdout.strip().splitlines()[-1])


def browser_bundle(folder: Path) -> Path:
    """The SDK as one browser script (it sets `LangGraphClient`), built into `folder`."""
    require_js_sdk()
    bundle = folder / "langgraph-sdk.js"
    subprocess.run(
        [
            str(ESBUILD),
            str(PACKAGE / "browser_entry.mjs"),
            "--bundle",
            "--format=iife",
            "--platform=browser",
            f"--outfile={bundle}",
            "--log-level=error",
        ],
        check=True,
        timeout=NODE_SECONDS,
    )
    return bundle
