"""The monthly sales report the shop owner gets by e-mail: plain text, fixed-width columns.

Rows come from the till export as dicts; amounts are integers in cents so the totals add up.
"""

from collections import defaultdict
from dataclasses import dataclass
from datetime import date


@dataclass(frozen=True)
class Sale:
    day: date
    product: str
    region: str
    quantity: int
    cents: int


def money(cents):
    """1234567 -> '12,345.67'; negative amounts (refunds) get a leading minus."""
    sign = "-" if cents < 0 else ""
    whole, frac = divmod(abs(cents), 100)
    return f"{sign}{whole:,}.{frac:02d}"


def load(rows):
    """Sales from export rows; skips the rows the till marks as voided."""
    sales = []
    for row in rows:
        if row.get("status") == "void":
            continue
        sales.append(Sale(date.fromisoformat(row["day"]), row["product"], row["region"],
                          int(row["qty"]), int(row["cents"])))
    return sales


def totals_by(sales, key):
    """{key value: (quantity, cents)}, for key 'product' or 'region'."""
    totals = defaultdict(lambda: [0, 0])
    for sale in sales:
        entry = totals[getattr(sale, key)]
        entry[0] += sale.quantity
        entry[1] += sale.cents
    return {k: tuple(v) for k, v in totals.items()}


def table(headers, rows, numeric=()):
    """Rows under headers, each column as wide as its widest cell; `numeric` columns align right."""
    widths = [len(h) for h in headers]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))

    def line(cells):
        parts = []
        for i, cell in enumerate(cells):
            parts.append(cell.rjust(widths[i]) if i in numeric else cell.ljust(widths[i]))
        return "  ".join(parts).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(headers), rule] + [line(r) for r in rows])


def best_day(sales):
    """The day with the highest takings (the earliest such day on a tie), or None."""
    per_day = defaultdict(int)
    for sale in sales:
        per_day[sale.day] += sale.cents
    if not per_day:
        return None
    return min(per_day, key=lambda d: (-per_day[d], d))


def month_report(sales, title):
    """Title, a product table (biggest sellers first), a region table, and the grand total."""
    products = sorted(totals_by(sales, "product").items(), key=lambda kv: (-kv[1][1], kv[0]))
    regions = sorted(totals_by(sales, "region").items())
    grand = sum(s.cents for s in sales)
    parts = [title, "=" * len(title), ""]
    parts.append(table(["Product", "Qty", "Revenue"],
                       [[p, str(q), money(c)] for p, (q, c) in products], numeric=(1, 2)))
    parts.append("")
    parts.append(table(["Region", "Revenue", "Share"],
                       [[r, money(c), f"{100 * c / grand:.1f}%" if grand else "-"] for r, (q, c) in regions],
                       numeric=(1, 2)))
    parts.append("")
    parts.append(f"Total: {money(grand)}")
    day = best_day(sales)
    if day is not None:
        parts.append(f"Best day: {day:%a %d %b}")
    return "\n".join(parts)
