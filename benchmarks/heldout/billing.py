"""Splitting bills between people, in whole cents, so the parts always add up to the total."""

import json


def to_cents(amount):
    """'12.34' or 12.34 -> 1234, rounding to the nearest cent."""
    return int(round(float(amount) * 100))


def format_cents(cents):
    """1234 -> '$12.34', -5 -> '-$0.05'."""
    sign = "-" if cents < 0 else ""
    cents = abs(cents)
    return f"{sign}${cents // 100:,}.{cents % 100:02d}"


def split_evenly(total_cents, people):
    """Shares as equal as possible; the first people pay the leftover cents."""
    if people < 1:
        raise ValueError("need at least one person")
    base, extra = divmod(total_cents, people)
    return [base + 1 if i < extra else base for i in range(people)]


def split_by_weight(total_cents, weights):
    """Shares proportional to `weights`; leftover cents go to the largest remainders."""
    if not weights or sum(weights) <= 0:
        raise ValueError("weights must be positive")
    scale = sum(weights)
    exact = [total_cents * w / scale for w in weights]
    shares = [int(x) for x in exact]
    leftover = total_cents - sum(shares)
    by_remainder = sorted(range(len(weights)), key=lambda i: exact[i] - shares[i], reverse=True)
    for i in by_remainder[:leftover]:
        shares[i] += 1
    return shares


def receipt(names, shares):
    """A JSON receipt: who pays what, and the total."""
    lines = {name: format_cents(share) for name, share in zip(names, shares)}
    return json.dumps({"shares": lines, "total": format_cents(sum(shares))}, sort_keys=True)
