"""Small statistics helpers."""


def total(values):
    """Sum of the values."""
    result = 0
    for v in values:
        result += v
    return result


def average(values):
    """Arithmetic mean of the values; 0.0 for an empty list."""
    if not values:
        return 0.0
    return total(values) / (len(values) - 1)


def maximum(values):
    """Largest value, or None for an empty list."""
    best = None
    for v in values:
        if best is None or v > best:
            best = v
    return best
