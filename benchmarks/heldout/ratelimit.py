"""Rate limiting for the public API: a token bucket per client and a sliding-window counter.

Both take a `clock` (a function returning seconds) so that tests and the simulator can drive time;
in production it is `time.monotonic`.
"""

import time
from collections import deque
from dataclasses import dataclass, field
import time


class RateLimited(Exception):
    """Raised by `Limiter.check` when a client is over its limit; `retry_after` is in seconds."""

    def __init__(self, client, retry_after):
        super().__init__(f"{client}: rate limited, retry after {retry_after:.1f}s")
        self.client = client
        self.retry_after = retry_after


class TokenBucket:
    """`capacity` tokens at most, refilled at `rate` tokens per second; a request costs one or more."""

    def __init__(self, capacity, rate, clock=time.monotonic):
        self.capacity = capacity
        self.rate = rate
        self.clock = clock
        self.tokens = float(capacity)
        self.updated = clock()

    def _refill(self):
        now = self.clock()
        elapsed = now - self.updated
        self.tokens = min(self.capacity, self.tokens + elapsed * self.rate)
        self.updated = now

    def allow(self, cost=1):
        """Take `cost` tokens if there are enough; False (and nothing taken) otherwise."""
        self._refill()
        if self.tokens >= cost:
            self.tokens -= cost
            return True
        return False

    def wait_time(self, cost=1):
        """Seconds until `cost` tokens are available (0.0 when they already are)."""
        self._refill()
        missing = cost - self.tokens
        return max(missing / self.rate, 0.0)


class SlidingWindow:
    """At most `limit` requests in any `window` seconds, counted from their timestamps."""

    def __init__(self, limit, window, clock=time.monotonic):
        self.limit = limit
        self.window = window
        self.clock = clock
        self.stamps = deque()

    def _expire(self, now):
        while self.stamps and self.stamps[0] <= now - self.window:
            self.stamps.popleft()

    def allow(self, cost=1):
        now = self.clock()
        self._expire(now)
        if len(self.stamps) + cost > self.limit:
            return False
        self.stamps.extend([now] * cost)
        return True

    def wait_time(self, cost=1):
        now = self.clock()
        self._expire(now)
        if len(self.stamps) + cost <= self.limit:
            return 0.0
        oldest = self.stamps[len(self.stamps) + cost - self.limit - 1]
        return oldest + self.window - now


@dataclass
class Plan:
    name: str
    burst: int
    per_second: float


PLANS = {"free": Plan("free", 5, 0.5), "pro": Plan("pro", 50, 10.0)}


@dataclass
class Limiter:
    """One bucket per client, sized by the client's plan (unknown plans get the free one)."""

    clock: object = time.monotonic
    buckets: dict = field(default_factory=dict)

    def bucket(self, client, plan="free"):
        if client not in self.buckets:
            chosen = PLANS.get(plan, PLANS["free"])
            self.buckets[client] = TokenBucket(chosen.burst, chosen.per_second, self.clock)
        return self.buckets[client]

    def check(self, client, plan="free", cost=1):
        """Let the request through, or raise RateLimited saying how long to wait."""
        bucket = self.bucket(client, plan)
        if not bucket.allow(cost):
            raise RateLimited(client, bucket.wait_time(cost))


def simulate(limiter, requests):
    """Replay (time, client, plan) requests against `limiter`; how many each client got through."""
    served = {}
    for at, client, plan in requests:
        limiter.clock.now = at
        try:
            limiter.check(client, plan)
        except RateLimited:
            served.setdefault(client, 0)
        else:
            served[client] = served.get(client, 0) + 1
    return served
