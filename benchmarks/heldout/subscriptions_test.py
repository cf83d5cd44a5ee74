def test_add_months(candidate):
    assert candidate(date(2024, 1, 31), 1) == date(2024, 2, 29)
    assert candidate(date(2023, 11, 15), 3) == date(2024, 2, 15)
    assert candidate(date(2024, 3, 31), -1) == date(2024, 2, 29)
    assert candidate(date(2024, 1, 10), -1) == date(2023, 12, 10)
    assert candidate(date(2022, 12, 5), 12) == date(2023, 12, 5)


def test_add_business_days(candidate):
    friday = date(2024, 5, 3)
    assert candidate(friday, 1) == date(2024, 5, 6)
    assert candidate(friday, 1, {date(2024, 5, 6)}) == date(2024, 5, 7)
    assert candidate(friday, 0) == friday


def test_Subscription(candidate):
    sub = candidate("acme", date(2024, 10, 31), months=1, price_cents=3000, trial_days=0)
    assert sub.renewals(date(2025, 3, 1)) == [date(2024, 11, 30), date(2024, 12, 31), date(2025, 1, 31),
                                              date(2025, 2, 28)]
    assert sub.period_of(date(2024, 12, 15)) == (date(2024, 11, 30), date(2024, 12, 31))
    assert sub.prorate(date(2024, 12, 16), 6100) == 1500
    trial = candidate("beta", date(2024, 1, 1), 12, 50000, 14)
    assert trial.trial_end == date(2024, 1, 15) and trial.renewals(date(2025, 1, 15)) == [date(2025, 1, 15)]


def test_invoice_due(candidate):
    assert candidate(date(2024, 12, 20), 6, {date(2024, 12, 25), date(2024, 12, 26)}) == date(2025, 1, 1)


def test_upcoming_invoices(candidate):
    subs = [Subscription("b", date(2024, 11, 20), 1, 900), Subscription("a", date(2023, 12, 28), 12, 9900)]
    assert candidate(subs, date(2024, 12, 10), 45) == [(date(2024, 12, 20), "b", 900), (date(2024, 12, 28), "a", 9900),
                                                   (date(2025, 1, 20), "b", 900)]


def test_describe(candidate):
    assert candidate(Subscription("x", date(2024, 1, 1), 12, 12000, 7)) == "x: 120.00 per year, trial until 2024-01-08"
