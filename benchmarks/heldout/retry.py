"""Retrying flaky calls: a decorator with a fixed number of attempts and a growing delay."""

import functools
import time
import functools


class GaveUp(Exception):
    """Raised when every attempt failed; `errors` holds what each attempt raised."""

    def __init__(self, errors):
        super().__init__(f"gave up after {len(errors)} attempts: {errors[-1]!r}")
        self.errors = errors


def delays(attempts, base=0.01, factor=2.0):
    """The pauses between attempts: base, base*factor, ... (one fewer than the attempts)."""
    return [base * factor ** k for k in range(attempts - 1)]


def retry(attempts=3, exceptions=(Exception,), base=0.0, sleep=time.sleep):
    """Call the function up to `attempts` times while it raises one of `exceptions`."""
    def decorate(func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            errors = []
            pauses = delays(attempts, base) if base else [0.0] * (attempts - 1)
            for attempt in range(attempts):
                try:
                    result = func(*args, **kwargs)
                except exceptions as exc:
                    errors.append(exc)
                    if attempt < attempts - 1:
                        sleep(pauses[attempt])
                else:
                    return result
            raise GaveUp(errors)
        return wrapper
    return decorate


class Flaky:
    """Fails `failures` times, then returns its value: a stand-in for a network call."""

    def __init__(self, failures, value):
        self.failures = failures
        self.value = value
        self.calls = 0

    def __call__(self):
        self.calls += 1
        if self.calls <= self.failures:
            raise ConnectionError(f"call {self.calls} failed")
        return self.value


@retry(attempts=3)
def fetch(source):
    """Read a value from `source` (a callable), retrying on errors."""
    return source()
