from datetime import date


def test_business_days(candidate):
    monday = date(2024, 3, 4)
    assert candidate(monday, monday + timedelta(days=4)) == 5
    assert candidate(monday, monday + timedelta(days=6)) == 5
    assert candidate(monday + timedelta(days=5), monday + timedelta(days=6)) == 0
    assert candidate(monday, monday + timedelta(days=13)) == 10
    assert candidate(monday, monday) == 1 and candidate(monday, monday - timedelta(days=1)) == 0
    assert candidate(date(2024, 12, 23), date(2024, 12, 27), [date(2024, 12, 25), date(2024, 12, 26)]) == 3
    assert candidate(date(2024, 12, 23), date(2024, 12, 31), [date(2024, 12, 28)]) == 7

