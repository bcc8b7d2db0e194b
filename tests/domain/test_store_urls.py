"""Which kind of store a store (or its URL) is: asked in one place, `backend_of`."""

from __future__ import annotations

import pytest

from domain.record.store import backend_of, open_store


def test_a_store_says_which_backend_it_is(store, store_kind):
    assert backend_of(store) == store_kind


@pytest.mark.parametrize(
    ("url", "backend"),
    [
        ("memory://", "memory"),
        ("sqlite:///var/holdpoint.db", "sqlite"),
        ("postgresql://u:p@db:5432/holdpoint", "postgres"),
        ("postgres://u:p@db/holdpoint", "postgres"),
        ("mysql://u@db/x", "unknown"),
    ],
)
def test_a_store_url_says_which_backend_it_names(url, backend):
    assert backend_of(url) == backend


def test_a_memory_store_opened_by_url_is_a_memory_store():
    with open_store("memory://") as store:
        assert backend_of(store) == "memory"
