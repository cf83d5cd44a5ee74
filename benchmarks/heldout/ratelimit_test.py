class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_TokenBucket(candidate):
    clock = Clock()
    b = candidate(3, 1.0, clock)
    assert [b.allow() for _ in range(4)] == [True, True, True, False]
    assert b.wait_time() == 1.0
    clock.now = 2.0
    assert b.allow(2) and not b.allow()
    clock.now = 3600.0
    assert [b.allow() for _ in range(4)] == [True, True, True, False]


def test_SlidingWindow(candidate):
    clock = Clock()
    w = candidate(2, 10, clock)
    assert w.allow() and w.allow() and not w.allow()
    clock.now = 4
    assert w.wait_time() == 6
    clock.now = 10
    assert w.allow() and w.allow() and not w.allow()


def test_Limiter(candidate):
    clock = Clock()
    limiter = candidate(clock)
    for _ in range(5):
        limiter.check("ann")
    try:
        limiter.check("ann")
    except RateLimited as exc:
        assert exc.retry_after == 2.0 and "ann" in str(exc)
    else:
        raise AssertionError("sixth request went through")
    limiter.check("bob", "pro", cost=50)


def test_simulate(candidate):
    requests = [(0, "a", "free")] * 6 + [(1000, "a", "free")] * 6 + [(0, "b", "gold")] * 2
    assert candidate(Limiter(Clock()), requests) == {"a": 10, "b": 2}
