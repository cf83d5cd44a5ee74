def test_split_evenly(candidate):
    assert candidate(100, 3) == [34, 33, 33] and sum(candidate(1001, 7)) == 1001 and candidate(5, 1) == [5]


def test_split_by_weight(candidate):
    assert candidate(100, [1, 1, 1]) == [34, 33, 33]
    assert candidate(1000, [2, 1, 1]) == [500, 250, 250]
    assert sum(candidate(999, [3, 5, 7])) == 999


def test_format_cents(candidate):
    assert candidate(123456) == "$1,234.56" and candidate(-5) == "-$0.05"


def test_to_cents(candidate):
    assert candidate("12.34") == 1234 and candidate(0.1 + 0.2) == 30


def test_receipt(candidate):
    assert candidate(["a", "b"], [34, 66]) == '{"shares": {"a": "$0.34", "b": "$0.66"}, "total": "$1.00"}'
