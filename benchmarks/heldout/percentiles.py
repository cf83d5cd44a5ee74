"""Latency percentiles for the service dashboard (p50, p95, p99 of the last minute's request times).

Same definition as numpy's default ("linear"): the p-th percentile of n samples sits at position
p/100 * (n - 1) of the sorted samples, interpolating between the two neighbours when that position is
not a whole number. Samples arrive in completion order, not sorted.
"""

import math


def percentile(samples, pct):
    """The `pct`-th percentile (0 to 100) of `samples`; None when there are none."""
    if not 0 <= pct <= 100:
        raise ValueError(f"percentile must be between 0 and 100, got {pct}")
    ordered = sorted(samples)
    if not ordered:
        return None
    position = pct / 100 * (len(ordered) - 1)
    low = math.floor(position)
    high = math.ceil(position)
    if low == high:
        return ordered[low]
    fraction = position - low
    return ordered[low] + (ordered[high] - ordered[low]) * fraction
