def test_is_leap_year(candidate):
    assert [candidate(y) for y in (1900, 2000, 2023, 2024, 2100, 2400)] == [False, True, False, True, False, True]


def test_days_in_month(candidate):
    assert candidate(2000, 2) == 29 and candidate(1900, 2) == 28 and candidate(2023, 4) == 30


def test_day_of_year(candidate):
    assert candidate(2000, 3, 1) == 61 and candidate(2023, 12, 31) == 365 and candidate(2000, 12, 31) == 366


def test_weekday(candidate):
    assert candidate(2000, 1, 1) == "Saturday" and candidate(2024, 2, 29) == "Thursday"
    assert candidate(2023, 1, 2) == "Monday"


def test_add_days(candidate):
    assert candidate(2000, 2, 28, 1) == (2000, 2, 29) and candidate(1999, 12, 31, 1) == (2000, 1, 1)
    assert candidate(2023, 1, 1, 365) == (2024, 1, 1)
