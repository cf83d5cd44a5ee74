"""Subscription dates for the billing service: renewals, trial ends, proration, invoice due dates.

Dates are `datetime.date`; a month later than the 31st of January is the last day of February
(renewals never skip a month), and invoices are due a number of business days after issue.
"""

import calendar
from dataclasses import dataclass
from datetime import date, timedelta
import calendar

WEEKEND = (5, 6)  # Saturday, Sunday


def add_months(day, months):
    """The same day `months` later (or earlier, when negative), clamped to the end of the month."""
    index = day.month - 1 + months
    year = day.year + index // 12
    month = index % 12 + 1
    last = calendar.monthrange(year, month)[1]
    return date(year, month, min(day.day, last))


def add_business_days(day, count, holidays=()):
    """`count` working days after `day` (weekends and `holidays` do not count)."""
    current = day
    while count > 0:
        current += timedelta(days=1)
        if current.weekday() not in WEEKEND and current not in holidays:
            count -= 1
    return current


def days_in_period(start, end):
    return (end - start).days


@dataclass
class Subscription:
    customer: str
    start: date
    months: int = 1  # billing period: 1 monthly, 12 yearly
    price_cents: int = 0
    trial_days: int = 0

    @property
    def trial_end(self):
        return self.start + timedelta(days=self.trial_days)

    def renewals(self, until):
        """Every renewal date after the trial, up to and including `until`."""
        dates = []
        k = 1
        while True:
            renewal = add_months(self.trial_end, k * self.months)
            if renewal > until:
                return dates
            dates.append(renewal)
            k += 1

    def period_of(self, day):
        """(start, end) of the billing period `day` falls in; end is the next renewal."""
        begin = self.trial_end
        k = 0
        while add_months(begin, (k + 1) * self.months) <= day:
            k += 1
        return add_months(begin, k * self.months), add_months(begin, (k + 1) * self.months)

    def prorate(self, change_day, new_price_cents):
        """What a plan change on `change_day` costs now: the price difference for the days left."""
        start, end = self.period_of(change_day)
        left = days_in_period(change_day, end)
        total = days_in_period(start, end)
        return round((new_price_cents - self.price_cents) * left / total)


def invoice_due(issued, terms_days=10, holidays=()):
    """Due date of an invoice issued on `issued`: `terms_days` business days later."""
    return add_business_days(issued, terms_days, holidays)


def upcoming_invoices(subscriptions, today, horizon_days=31):
    """(renewal date, customer, cents) for each renewal in the next `horizon_days`, soonest first."""
    until = today + timedelta(days=horizon_days)
    rows = []
    for sub in subscriptions:
        for renewal in sub.renewals(until):
            if renewal >= today:
                rows.append((renewal, sub.customer, sub.price_cents))
    return sorted(rows)


def describe(sub):
    """One line for the admin page."""
    period = "year" if sub.months == 12 else f"{sub.months} month(s)"
    trial = f", trial until {sub.trial_end.isoformat()}" if sub.trial_days else ""
    return f"{sub.customer}: {sub.price_cents / 100:.2f} per {period}{trial}"
