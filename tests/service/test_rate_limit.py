"""Rate limits per API key on runs and decisions, and per client address on
requests without a valid key: a token bucket, 429 past it.

The limiter's clock is injected, so the tests move time forward by hand and
never sleep: the buckets are driven past their limit, refused, and let through
again once the clock has moved on by the `Retry-After` the refusal named.
"""

from __future__ import annotations

import pytest

from service.rate_limit import AUTH_FAILURES, DECISIONS, RUNS, Limit, RateLimiter
from service.settings import ServerSettings
from tests.api.http_harness import Server, server_on


class Clock:
    """A clock that moves only when told to."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


# -- the token bucket ----------------------------------------------------------


def test_a_bucket_lets_a_burst_through_then_refuses_until_a_token_is_back():
    # Given a limit of 3 at once, then 2 a second
    clock = Clock()
    limiter = RateLimiter({RUNS: Limit(rate=2.0, burst=3)}, clock)
    # When a key asks 5 times at once
    verdicts = [limiter.take(RUNS, "k1") for _ in range(5)]
    # Then 3 pass, and the 2 others are refused, to retry after 1 s (half a second, rounded up)
    assert [v.allowed for v in verdicts] == [True, True, True, False, False]
    assert [v.retry_after for v in verdicts[3:]] == [1, 1]
    # And only the first refusal of the run is to be recorded
    assert [v.first_refusal for v in verdicts[3:]] == [True, False]
    # When half a second passes, one token is back, and only one
    clock.advance(0.5)
    assert limiter.take(RUNS, "k1").allowed
    assert not limiter.take(RUNS, "k1").allowed


def test_a_bucket_refills_to_its_burst_and_no_further():
    clock = Clock()
    limiter = RateLimiter({RUNS: Limit(rate=1.0, burst=2)}, clock)
    assert all(limiter.take(RUNS, "k").allowed for _ in range(2))
    # Given an hour without requests
    clock.advance(3600)
    # Then the bucket holds its burst again, not 3,600 tokens
    assert [limiter.take(RUNS, "k").allowed for _ in range(3)] == [True, True, False]


def test_keys_and_kinds_have_buckets_of_their_own():
    clock = Clock()
    limiter = RateLimiter({RUNS: Limit(1.0, 1), DECISIONS: Limit(1.0, 1)}, clock)
    assert limiter.take(RUNS, "k1").allowed
    # Given k1 has spent its run
    assert not limiter.take(RUNS, "k1").allowed
    # Then k1's decisions and k2's runs are untouched
    assert limiter.take(DECISIONS, "k1").allowed
    assert limiter.take(RUNS, "k2").allowed


def test_a_rate_of_zero_turns_the_limit_off():
    limiter = RateLimiter({RUNS: Limit(rate=0, burst=0)}, Clock())
    assert all(limiter.take(RUNS, "k").allowed for _ in range(10_000))
    assert RateLimiter({}, Clock()).take(DECISIONS, "k").allowed


def test_past_its_bucket_cap_the_limiter_forgets_only_refilled_buckets(monkeypatch):
    # Given a limiter that keeps at most 2 buckets: .1 spent at 0 s, .2 spent at 0.9 s
    monkeypatch.setattr("service.rate_limit.MAX_BUCKETS", 2)
    clock = Clock()
    limiter = RateLimiter({AUTH_FAILURES: Limit(rate=1.0, burst=1)}, clock)
    limiter.take(AUTH_FAILURES, "10.0.0.1")
    clock.advance(0.9)
    limiter.take(AUTH_FAILURES, "10.0.0.2")
    # When a third address comes at 1 s, when .1 has refilled and .2 has not
    clock.advance(0.1)
    assert limiter.take(AUTH_FAILURES, "10.0.0.3").allowed
    # Then .1's bucket is gone, and .2's is kept: it is still refused
    assert len(limiter) == 2
    assert not limiter.take(AUTH_FAILURES, "10.0.0.2").allowed


def test_a_slow_refill_names_the_whole_seconds_to_wait():
    clock = Clock()
    limiter = RateLimiter({DECISIONS: Limit(rate=0.1, burst=1)}, clock)
    assert limiter.take(DECISIONS, "k").allowed
    assert limiter.take(DECISIONS, "k").retry_after == 10
    clock.advance(2.5)
    assert limiter.take(DECISIONS, "k").retry_after == 8  # 7.5 s, rounded up


# -- settings -----------------------------------------------------------------


def test_limits_come_from_the_defaults_the_environment_and_holdpoint_toml(monkeypatch):
    # Given no setting anywhere: the defaults
    for kind in ("RUN", "DECISION", "AUTH_FAILURE"):
        monkeypatch.delenv(f"HOLDPOINT_{kind}_RATE_LIMIT", raising=False)
        monkeypatch.delenv(f"HOLDPOINT_{kind}_BURST", raising=False)
    defaults = ServerSettings.from_env()
    assert (defaults.run_rate_limit, defaults.run_burst) == (100.0, 200)
    assert (defaults.decision_rate_limit, defaults.decision_burst) == (50.0, 100)
    assert (defaults.auth_failure_rate_limit, defaults.auth_failure_burst) == (1.0, 100)
    # Given the environment sets some
    monkeypatch.setenv("HOLDPOINT_RUN_BURST", "7")
    monkeypatch.setenv("HOLDPOINT_DECISION_RATE_LIMIT", "0.5")
    monkeypatch.setenv("HOLDPOINT_AUTH_FAILURE_BURST", "20")
    settings = ServerSettings.from_env()
    assert (settings.run_burst, settings.decision_rate_limit) == (7, 0.5)
    assert settings.auth_failure_burst == 20
    # Given a holdpoint.toml's [server] table sets one too: it wins over the environment
    assert ServerSettings.from_env(run_burst=3).run_burst == 3
    # And the limiter is built from them
    limiter = RateLimiter.from_settings(settings)
    assert limiter.limits == {
        RUNS: Limit(100.0, 7),
        DECISIONS: Limit(0.5, 100),
        AUTH_FAILURES: Limit(1.0, 20),
    }


def test_a_malformed_limit_in_the_environment_is_named(monkeypatch):
    monkeypatch.setenv("HOLDPOINT_RUN_BURST", "lots")
    with pytest.raises(ValueError, match="HOLDPOINT_RUN_BURST='lots' is not a valid int"):
        ServerSettings.from_env()


# -- through the server ---------------------------------------------------------

RUN = {"assistant_id": "refund", "input": {"refund_amount": 1.0}}


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def server(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp("store")
    with server_on(request.param, folder) as running:
        yield running


@pytest.fixture
def clock(server):
    """Tight limits on a clock of the test's own: 3 runs at once then 1 a second,
    2 decisions at once then one every 2 seconds, 3 requests without a valid key
    at once then 1 a second."""
    clock = Clock()
    settings = server.services.settings.updated(
        run_rate_limit=1.0,
        run_burst=3,
        decision_rate_limit=0.5,
        decision_burst=2,
        auth_failure_rate_limit=1.0,
        auth_failure_burst=3,
    )
    server.services.rate_limiter = RateLimiter.from_settings(settings, clock)
    yield clock
    server.services.rate_limiter = RateLimiter.from_settings(server.services.settings)


def refusals(server: Server) -> list[dict]:
    with server.http("auditor") as auditor:
        return auditor.get("/audit/refusals", params={"limit": 1000}).json()["data"]


def rate_refusals(server: Server) -> list[dict]:
    return [r for r in refusals(server) if r["reason"] == "rate_limited"]


def assert_too_many(response, kind: str, retry_after: int) -> None:
    assert response.status_code == 429, response.text[:300]
    assert response.headers["content-type"] == "application/problem+json"
    assert response.headers["retry-after"] == str(retry_after)
    problem = response.json()
    assert problem["type"].endswith("/rate-limited")
    assert problem["reason"] == "rate_limited"
    assert problem["retry_after"] == retry_after
    assert f"over its limit of {kind}" in problem["detail"]


def test_runs_past_the_limit_get_429_then_pass_once_the_window_has_moved(server, clock):
    refused_before = len(rate_refusals(server))
    with server.http("agent") as agent, server.http("agent2") as other:
        # Given an agent that has started its burst of 3 runs
        assert [agent.post("/runs/wait", json=RUN).status_code for _ in range(3)] == [200] * 3
        # When it starts 2 more at once
        head = server.head()
        first, second = agent.post("/runs/wait", json=RUN), agent.post("/runs", json=RUN)
        # Then both get 429, retry after 1 s; no run was recorded
        assert_too_many(first, "runs", 1)
        assert_too_many(second, "runs", 1)
        # And the first refusal is on record, once: a flood does not grow the store
        assert len(rate_refusals(server)) == refused_before + 1
        assert server.head() == head + 1
        # And another key is not held back
        assert other.post("/runs/wait", json=RUN).status_code == 200
        # When the clock moves on by the Retry-After
        clock.advance(1.0)
        # Then the agent's next run passes, and the one after it is refused again
        assert agent.post("/runs/wait", json=RUN).status_code == 200
        assert agent.post("/runs/wait", json=RUN).status_code == 429
    assert len(rate_refusals(server)) == refused_before + 2


def paused(agent) -> tuple[str, str]:
    """A refund paused at its interrupt: (thread id, interrupt id)."""
    output = agent.post("/runs/wait", json={**RUN, "input": {"refund_amount": 500.0}})
    thread_id = output.headers["content-location"].split("/")[2]
    return thread_id, output.json()["__interrupt__"][0]["id"]


def test_decisions_past_the_limit_get_429_then_pass_once_the_window_has_moved(server, clock):
    with server.http("agent") as agent:
        threads = [paused(agent) for _ in range(3)]
    refused_before = len(rate_refusals(server))
    with server.http("reviewer") as reviewer:
        # Given a reviewer who has made its 2 decisions at once
        for _, interrupt_id in threads[:2]:
            decided = reviewer.post(
                f"/approvals/{interrupt_id}/decision", json={"decision": "approve"}
            )
            assert decided.status_code == 200, decided.text[:300]
        # When it decides a third
        thread_id, interrupt_id = threads[2]
        third = reviewer.post(f"/approvals/{interrupt_id}/decision", json={"decision": "approve"})
        # Then it is a 429, retry after 2 s, and the interrupt is still open
        assert_too_many(third, "decisions", 2)
        assert interrupt_id in server.store.thread(thread_id).interrupts
        # When the clock moves on by the Retry-After
        clock.advance(2.0)
        # Then the same decision passes
        again = reviewer.post(f"/approvals/{interrupt_id}/decision", json={"decision": "approve"})
        assert again.status_code == 200, again.text[:300]
        assert again.json()["decided_by"]["id"] == "reviewer"
    refused = rate_refusals(server)
    assert len(refused) == refused_before + 1
    assert refused[-1]["principal_id"] == "reviewer"
    assert refused[-1]["action"] == f"POST /approvals/{interrupt_id}/decision"


def test_reads_are_never_rate_limited(server, clock):
    # Given an agent that has spent its runs
    with server.http("agent") as agent:
        for _ in range(3):
            agent.post("/runs/wait", json=RUN)
        assert agent.post("/runs/wait", json=RUN).status_code == 429
        # Then it still reads threads and assistants
        assert agent.post("/threads/search", json={}).status_code == 200
        assert agent.post("/assistants/search", json={}).status_code == 200


def test_an_address_flooding_without_a_valid_key_gets_429_and_records_one_refusal(server, clock):
    before = len(refusals(server))
    with server.http(headers={"x-api-key": "hp_guess"}) as guesser, server.http("agent") as agent:
        # Given an address whose 3 requests without a valid key were refused 401
        answers = [guesser.post("/threads/search", json={}) for _ in range(3)]
        assert [a.status_code for a in answers] == [401] * 3
        # When it sends 3 more
        flood = [guesser.post("/threads/search", json={}) for _ in range(3)]
        # Then each gets 429 with Retry-After, naming the cause
        for response in flood:
            assert response.status_code == 429, response.text[:300]
            assert response.headers["retry-after"] == "1"
            assert "requests without a valid key" in response.json()["detail"]
        # And only the 3 refusals and the first 429 are on record
        recorded = refusals(server)[before:]
        assert [r["reason"] for r in recorded] == ["unknown_key"] * 3 + ["rate_limited"]
        assert recorded[-1]["principal_id"] is None
        # And a valid key from the same address is not held back
        assert agent.post("/threads/search", json={}).status_code == 200
        # When the clock moves on by the Retry-After
        clock.advance(1.0)
        # Then the next guess is a recorded 401 again
        assert guesser.post("/threads/search", json={}).status_code == 401
    assert [r["reason"] for r in refusals(server)[before:]][-1] == "unknown_key"
