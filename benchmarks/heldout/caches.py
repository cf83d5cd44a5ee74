"""Two small caches for the API client: least-recently-used, and time-to-live."""

import time
from collections import OrderedDict
from collections import OrderedDict

MISSING = object()


class LRUCache:
    """Keeps the `capacity` most recently used keys; reading a key counts as using it."""

    def __init__(self, capacity=128):
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self.capacity = capacity
        self.data = OrderedDict()
        self.hits = self.misses = 0

    def get(self, key, default=None):
        if key not in self.data:
            self.misses += 1
            return default
        self.hits += 1
        self.data.move_to_end(key)
        return self.data[key]

    def put(self, key, value):
        self.data[key] = value
        self.data.move_to_end(key)
        while len(self.data) > self.capacity:
            self.data.popitem(last=False)


class TTLCache:
    """Forgets each entry `ttl` seconds after it was stored."""

    def __init__(self, ttl=60.0, clock=time.monotonic):
        self.ttl = ttl
        self.clock = clock
        self.data = {}

    def get(self, key, default=None):
        entry = self.data.get(key, MISSING)
        if entry is MISSING:
            return default
        value, expires = entry
        if self.clock() >= expires:
            del self.data[key]
            return default
        return value

    def put(self, key, value):
        self.data[key] = (value, self.clock() + self.ttl)

    def purge(self):
        """Drop every expired entry; returns how many were dropped."""
        now = self.clock()
        dead = [k for k, (_, expires) in self.data.items() if now >= expires]
        for key in dead:
            del self.data[key]
        return len(dead)


def cached(cache):
    """Decorator: remember results by positional and keyword arguments in `cache`."""
    def decorate(func):
        def wrapper(*args, **kwargs):
            key = (args, tuple(sorted(kwargs.items())))
            value = cache.get(key, MISSING)
            if value is MISSING:
                value = func(*args, **kwargs)
                cache.put(key, value)
            return value
        return wrapper
    return decorate
