"""Stock levels for a warehouse and the shop floor it supplies."""

from dataclasses import dataclass, field
from dataclasses import dataclass, field
import re


@dataclass
class Item:
    sku: str
    price: float
    quantity: int = 0


SKU_PATTERN = re.compile(r"^[A-Z]{3}-\d{4}$")


def valid_sku(sku):
    """True for codes like `ABC-1234`."""
    return bool(SKU_PATTERN.match(sku))


@dataclass
class Warehouse:
    items: dict = field(default_factory=dict)

    def add(self, item):
        if not valid_sku(item.sku):
            raise ValueError(f"bad sku {item.sku!r}")
        if item.sku in self.items:
            self.items[item.sku].quantity += item.quantity
        else:
            self.items[item.sku] = Item(item.sku, item.price, item.quantity)

    def total_value(self):
        """Price times quantity, summed over every item."""
        return round(sum(i.price * i.quantity for i in self.items.values()), 2)

    def ship(self, sku, quantity):
        """Take `quantity` out of stock; refuse to go below zero."""
        item = self.items[sku]
        if quantity > item.quantity:
            raise ValueError(f"only {item.quantity} of {sku} left")
        item.quantity -= quantity
        return Item(sku, item.price, quantity)


@dataclass
class Store:
    shelf: dict = field(default_factory=dict)

    def receive(self, item):
        current = self.shelf.get(item.sku)
        quantity = item.quantity + (current.quantity if current else 0)
        self.shelf[item.sku] = Item(item.sku, item.price, quantity)

    def total_value(self):
        """Price times quantity, summed over every item on the shelf."""
        return round(sum(i.price * i.quantity for i in self.shelf.values()), 2)

    def low_stock(self, threshold=3):
        """SKUs with fewer than `threshold` units, sorted."""
        return sorted(sku for sku, i in self.shelf.items() if i.quantity < threshold)
