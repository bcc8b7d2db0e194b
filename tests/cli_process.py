"""`holdpoint ARGS` as a user runs it: a subprocess of this checkout, on one store."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def holdpoint(store_url: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run `holdpoint ARGS` with HOLDPOINT_STORE set; its exit status, stdout and stderr."""
    return subprocess.run(
        [sys.executable, "-m", "api.cli.main", *args],
        cwd=REPO,
        env={**os.environ, "HOLDPOINT_STORE": store_url},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def holdpoint_keyed(
    store_url: str, *args: str, key: Path | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """`holdpoint ARGS` with the seal key `key` in HOLDPOINT_SEAL_KEY, or none at all (not
    the one this process may have)."""
    env = {**os.environ, "HOLDPOINT_STORE": store_url}
    env.pop("HOLDPOINT_SEAL_KEY", None)
    if key is not None:
        env["HOLDPOINT_SEAL_KEY"] = str(key)
    return subprocess.run(
        [sys.executable, "-m", "api.cli.main", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
