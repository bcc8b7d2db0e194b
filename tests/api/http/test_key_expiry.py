"""A key past its expiry over HTTP: given a reviewer's key valid for a day, when the clock
passes its expiry, then every request with it is a 401 saying it expired, each recorded
as a refused attempt (`expired_key`), in every process (the expiry is on the key's
record), and a browser session opened with it ends too."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, tzinfo

import pytest

from tests.api.http_harness import running_server


class Later(datetime):
    """The keyring's clock, two days on."""

    @classmethod
    def now(cls, tz: tzinfo | None = None) -> datetime:  # type: ignore[override]
        return datetime.now(tz) + timedelta(days=2)


@pytest.fixture
def server(tmp_path):
    with running_server(f"sqlite:///{tmp_path / 'holdpoint.db'}") as running:
        yield running


def test_an_expired_key_is_refused_with_its_reason_and_recorded(server, monkeypatch):
    expiry = datetime.now(UTC) + timedelta(days=1)
    info, raw = server.services.keyring.create("tess", "reviewer", expires_at=expiry)
    headers = {"x-api-key": raw}
    with server.http() as anonymous:
        assert anonymous.get("/approvals", headers=headers).status_code == 200

        monkeypatch.setattr("domain.access.keyring.datetime", Later)
        refused = anonymous.get("/approvals", headers=headers)
    assert refused.status_code == 401
    assert f"The API key {info.key_id} expired at" in refused.json()["detail"]
    with server.http("auditor") as auditor:
        refusals = auditor.get("/audit/refusals", params={"limit": 1000}).json()["data"]
    assert refusals[-1]["reason"] == "expired_key"
