"""How long the HTTP client waits before retrying a 429 or 503 answer, from its Retry-After header.

The header holds either a number of seconds (`Retry-After: 120`) or an HTTP date
(`Retry-After: Wed, 21 Oct 2015 07:28:00 GMT`). A date already past means "retry now". Without a
usable header the client falls back to `default`; a server asking for more than `cap` seconds gets
`cap`, so that one misconfigured proxy cannot park a worker for hours.
"""

from datetime import UTC, datetime
from email.utils import parsedate_to_datetime


def retry_delay(header, now=None, default=1.0, cap=300.0):
    """Seconds to wait before the next attempt, between 0 and `cap`."""
    if not header or not header.strip():
        return default
    value = header.strip()
    if value.isdigit():
        return min(float(value), cap)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return default
    now = now or datetime.now(UTC)
    wait = (when - now).total_seconds()
    return min(max(wait, 0.0), cap)
