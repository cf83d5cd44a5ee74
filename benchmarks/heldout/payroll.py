"""Payroll report: read the HR export (CSV), then summarise pay by department.

The export has a header line; columns are name, department, hours, rate and, for some people,
a bonus. Amounts are in dollars with up to two decimals.
"""

import csv
import io
import statistics
from dataclasses import dataclass
from dataclasses import dataclass

OVERTIME_AFTER = 40.0
OVERTIME_FACTOR = 1.5


@dataclass
class Employee:
    name: str
    department: str
    hours: float
    rate: float
    bonus: float = 0.0

    def pay(self):
        """Regular hours at `rate`, hours past 40 at time and a half, plus the bonus."""
        regular = min(self.hours, OVERTIME_AFTER)
        overtime = max(self.hours - OVERTIME_AFTER, 0.0)
        return round(regular * self.rate + overtime * self.rate * OVERTIME_FACTOR + self.bonus, 2)


@dataclass
class Contractor:
    name: str
    department: str
    hours: float
    rate: float

    def pay(self):
        """Contractors bill every hour at their rate: no overtime, no bonus."""
        return round(self.hours * self.rate, 2)


class ExportError(ValueError):
    """A row of the export that cannot be read."""


def parse_rows(text):
    """Employees and contractors from the export; contractors' department ends in ' (ext)'.

    Blank lines (the export ends with some) are skipped."""
    people = []
    reader = csv.DictReader(io.StringIO(text))
    for number, row in enumerate(reader, 2):
        if not any((value or "").strip() for value in row.values()):
            continue
        try:
            name = row["name"].strip()
            department = row["department"].strip()
            hours, rate = float(row["hours"]), float(row["rate"])
            bonus = float(row.get("bonus") or 0)
        except (KeyError, TypeError, ValueError) as exc:
            raise ExportError(f"line {number}: {exc}") from exc
        if department.endswith(" (ext)"):
            people.append(Contractor(name, department[:-6], hours, rate))
        else:
            people.append(Employee(name, department, hours, rate, bonus))
    return people


def by_department(people):
    """{department: [people]} in the order departments first appear."""
    groups = {}
    for person in people:
        groups.setdefault(person.department, []).append(person)
    return groups


def department_summary(people):
    """{department: (headcount, total pay, average pay)}, averages over that department's people."""
    summary = {}
    for department, members in by_department(people).items():
        total = round(sum(p.pay() for p in members), 2)
        summary[department] = (len(members), total, round(total / len(members), 2))
    return summary


def median_pay(people):
    """The median pay over everyone, or 0.0 for nobody."""
    pays = [p.pay() for p in people]
    return statistics.median(pays) if pays else 0.0


def top_earners(people, n=3):
    """Names of the `n` best paid, highest first; ties by name."""
    ranked = sorted(people, key=lambda p: (-p.pay(), p.name))
    return [p.name for p in ranked[:n]]


def report(text):
    """The text the HR tool prints: one line per department, then the median."""
    people = parse_rows(text)
    lines = []
    for department, (count, total, average) in sorted(department_summary(people).items()):
        lines.append(f"{department}: {count} people, total {total:.2f}, average {average:.2f}")
    lines.append(f"median: {median_pay(people):.2f}")
    return "\n".join(lines)
