"""The thread page says what its evidence bundle can prove: with no seal in the store, that
a bundle proves its chain only and how to seal first; once sealed, up to which position."""

from __future__ import annotations

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from integrity.sealing import make_seal
from tests.api.http_harness import running_server
from tests.api.ui.ui_client import UiClient


@pytest.fixture
def server(tmp_path):
    with running_server(f"sqlite:///{tmp_path / 'holdpoint.db'}") as running:
        yield running


def thread_page(server, thread_id):
    auditor = UiClient(server.url)
    try:
        assert auditor.sign_in(server.keys["auditor"]).status_code == 303
        return auditor.get(f"/ui/threads/{thread_id}").text
    finally:
        auditor.close()


def test_the_evidence_download_says_whether_a_seal_covers_it(server):
    # Given a thread in a store never sealed
    agent = server.sdk("agent")
    thread_id = agent.threads.create()["thread_id"]
    agent.runs.wait(thread_id, "refund", input={"refund_amount": 300.0})
    # Then its page warns that a bundle would prove its chain only, and how to seal
    unsealed = thread_page(server, thread_id)
    assert "No seal yet: a bundle exported now proves its hash chain only" in unsealed
    assert "holdpoint seal" in unsealed
    # When the log is sealed
    document, _, problems = make_seal(server.store, Ed25519PrivateKey.generate())
    assert document is not None, problems
    # Then the page names the seal's reach instead
    sealed = thread_page(server, thread_id)
    assert "No seal yet" not in sealed
    assert f"Latest seal: positions 1 to {document['position']}" in sealed
