class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_LRUCache(candidate):
    c = candidate(2)
    c.put("a", 1)
    c.put("b", 2)
    assert c.get("a") == 1
    c.put("c", 3)
    assert c.get("a") == 1 and c.get("b") is None and c.get("c") == 3
    assert (c.hits, c.misses) == (3, 1)


def test_TTLCache(candidate):
    clock = Clock()
    c = candidate(10, clock)
    c.put("a", 1)
    clock.now = 5
    c.put("b", 2)
    assert c.get("a") == 1
    clock.now = 10
    assert c.get("a") is None and c.get("b") == 2 and c.purge() == 0
    clock.now = 20
    assert c.purge() == 1


def test_cached(candidate):
    calls = []

    @candidate(LRUCache(4))
    def scale(x, factor=1):
        calls.append((x, factor))
        return x * factor

    assert scale(2) == 2 and scale(2, factor=3) == 6 and scale(2) == 2 and scale(2, factor=3) == 6
    assert calls == [(2, 1), (2, 3)]
