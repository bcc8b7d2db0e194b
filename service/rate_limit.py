"""Rate limits per API key on the endpoints that run graph code or decide, and per
client address on failed authentications: 429 past them.

Each key has one token bucket per kind of request (`RUNS`: every endpoint
that starts a run, a resume included; `DECISIONS`: `POST
/approvals/{id}/decision`); each client address has one for the requests it
sends without a valid key (`AUTH_FAILURES`), so that a flood of keyless or
guessed keys records its first refusals, then one `rate_limited`, and
nothing more until the address slows down. A valid key is never held back
by its address's failures. A bucket holds up to `burst` tokens and gains
`rate` tokens a second; a request takes one, or is refused with 429, a
`Retry-After` header (whole seconds until a token is back) and
problem+json. A limit is per process: with N API processes a key may do N
times as much.

The limit is checked after authentication, so that a wrong key cannot spend
another key's tokens, and it never holds a request back: there is no queue.
The first refusal of a run of refusals is recorded as an `AccessRefused`
event (reason `rate_limited`), like every other refusal; the ones after it,
until the key is let through again, are not, so that a flood cannot grow
the store. The clock is injectable (`RateLimiter(clock=...)`), for tests.
`api.http.auth.throttle` answers the 429.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from service.settings import ServerSettings

RUNS = "runs"
DECISIONS = "decisions"
AUTH_FAILURES = "requests without a valid key"
MAX_BUCKETS = 100_000  # past this many keys and addresses, the refilled buckets are dropped


@dataclass(frozen=True)
class Limit:
    """`burst` requests at once, then `rate` a second; a rate of 0 means no limit."""

    rate: float
    burst: int

    @property
    def capacity(self) -> float:
        """The tokens a bucket holds when full: the burst, and never less than one."""
        return float(max(self.burst, 1))

    @property
    def unlimited(self) -> bool:
        return self.rate <= 0


@dataclass(frozen=True)
class Verdict:
    """Whether a request may go on; if not, when to retry and whether to record it."""

    allowed: bool
    retry_after: int = 0  # whole seconds
    first_refusal: bool = False


class _Bucket:
    __slots__ = ("refusing", "tokens", "updated")

    def __init__(self, tokens: float, now: float) -> None:
        self.tokens = tokens
        self.updated = now
        self.refusing = False


class RateLimiter:
    """Token buckets per (kind of request, key id). Safe to share between threads."""

    def __init__(
        self, limits: dict[str, Limit], clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.limits = limits
        self.clock = clock
        self._buckets: dict[tuple[str, str], _Bucket] = {}
        self._lock = threading.Lock()

    @classmethod
    def from_settings(
        cls, settings: ServerSettings, clock: Callable[[], float] = time.monotonic
    ) -> RateLimiter:
        runs = Limit(settings.run_rate_limit, settings.run_burst)
        decisions = Limit(settings.decision_rate_limit, settings.decision_burst)
        failures = Limit(settings.auth_failure_rate_limit, settings.auth_failure_burst)
        return cls({RUNS: runs, DECISIONS: decisions, AUTH_FAILURES: failures}, clock)

    def __len__(self) -> int:
        """How many buckets the limiter holds (at most about `MAX_BUCKETS`)."""
        return len(self._buckets)

    def take(self, kind: str, key_id: str) -> Verdict:
        """Take a token from the bucket of `kind` for `key_id` (a key id, or a client
        address for `AUTH_FAILURES`), if it has one."""
        limit = self.limits.get(kind)
        if limit is None or limit.unlimited:
            return Verdict(allowed=True)
        with self._lock:
            now = self.clock()
            bucket = self._buckets.get((kind, key_id))
            if bucket is None:
                if len(self._buckets) >= MAX_BUCKETS:
                    self._forget_full_buckets(now)
                bucket = self._buckets[kind, key_id] = _Bucket(limit.capacity, now)
            elapsed = max(now - bucket.updated, 0.0)
            bucket.tokens = min(limit.capacity, bucket.tokens + elapsed * limit.rate)
            bucket.updated = now
            if bucket.tokens >= 1.0:
                bucket.tokens -= 1.0
                bucket.refusing = False
                return Verdict(allowed=True)
            first = not bucket.refusing
            bucket.refusing = True
            wait = (1.0 - bucket.tokens) / limit.rate
            return Verdict(allowed=False, retry_after=max(1, math.ceil(wait)), first_refusal=first)

    def _forget_full_buckets(self, now: float) -> None:
        """Drop the buckets that have refilled: a new one would be the same."""
        for (kind, key_id), bucket in list(self._buckets.items()):
            limit = self.limits[kind]
            if bucket.tokens + (now - bucket.updated) * limit.rate >= limit.capacity:
                del self._buckets[kind, key_id]
