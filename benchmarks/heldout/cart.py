"""A shopping cart with discount codes."""

from decimal import Decimal, ROUND_HALF_UP
from decimal import Decimal, ROUND_HALF_UP

CODES = {"SAVE10": Decimal("0.10"), "HALF": Decimal("0.50")}


def money(value):
    """Round to cents, halves up, as the till does."""
    return Decimal(value).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)


class Line:
    def __init__(self, name, price, quantity=1):
        if quantity < 1:
            raise ValueError("quantity must be at least 1")
        self.name = name
        self.price = money(price)
        self.quantity = quantity

    def total(self):
        return self.price * self.quantity


class Cart:
    def __init__(self, lines=None, code=None):
        self.lines = list(lines) if lines else []
        self.code = code

    def add(self, name, price, quantity=1):
        for line in self.lines:
            if line.name == name:
                line.quantity += quantity
                return line
        line = Line(name, price, quantity)
        self.lines.append(line)
        return line

    def remove(self, name):
        self.lines = [line for line in self.lines if line.name != name]

    def subtotal(self):
        return sum((line.total() for line in self.lines), Decimal("0"))

    def discount(self):
        rate = CODES.get((self.code or "").upper(), Decimal("0"))
        return money(self.subtotal() * rate)

    def total(self):
        return money(self.subtotal() - self.discount())


def merge(first, second):
    """One cart holding the lines of both (the first cart's discount code wins)."""
    merged = Cart(code=first.code or second.code)
    for cart in (first, second):
        for line in cart.lines:
            merged.add(line.name, line.price, line.quantity)
    return merged
