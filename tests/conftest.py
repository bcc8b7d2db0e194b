"""Shared fixtures: every store-backed test runs on each store kind."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from domain.application import Workflows
from domain.store import open_store

STORE_KINDS = ["memory", "sqlite"]


def store_url(kind: str, tmp_path: Path) -> str:
    if kind == "memory":
        return "memory://"
    if kind == "sqlite":
        return f"sqlite:///{tmp_path / 'holdpoint.db'}"
    raise ValueError(kind)


@pytest.fixture(params=STORE_KINDS)
def store_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def store_url_for(store_kind: str, tmp_path: Path) -> str:
    return store_url(store_kind, tmp_path)


@pytest.fixture
def store(store_url_for: str) -> Iterator[Workflows]:
    with open_store(store_url_for) as opened:
        yield opened


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'holdpoint.db'}"
