"""What a test does when a part it needs is missing: skip with the reason on a
laptop, fail in CI (CI=true), which must run every test."""

from __future__ import annotations

import os
from typing import NoReturn

import pytest


def missing(what: str, problem: str) -> NoReturn:
    """Skip (or, in CI, fail) because `problem` keeps `what` from running."""
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"CI must run {what}: {problem}")
    pytest.skip(problem)
