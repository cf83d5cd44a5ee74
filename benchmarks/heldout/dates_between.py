"""Working days for the leave-request form: how many days of leave a request from `start` to `end` costs.

Both ends count, weekends are free, and so are the public holidays the office is closed on (a holiday
that falls on a weekend is not taken off twice).
"""

from datetime import timedelta

ONE_DAY = timedelta(days=1)


def business_days(start, end, holidays=()):
    """Weekdays from `start` to `end` inclusive that are not in `holidays`; 0 if `end` is before `start`."""
    if end < start:
        return 0
    closed = set(holidays)
    count = 0
    day = start
    while day <= end:
        if day.isoweekday() < 6 and day not in closed:
            count += 1
        day += ONE_DAY
    return count

