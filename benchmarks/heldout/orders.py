"""The order workflow of the web shop, as a small state machine.

An order moves through states on events (`pay`, `ship`, ...). Every change is kept in the order's
history, so support staff can see what happened and undo a mistaken step.
"""

from datetime import datetime
from enum import Enum
import logging

log = logging.getLogger("orders")


class State(Enum):
    NEW = "new"
    PAID = "paid"
    PACKED = "packed"
    SHIPPED = "shipped"
    DELIVERED = "delivered"
    CANCELLED = "cancelled"
    REFUNDED = "refunded"


TRANSITIONS = {
    (State.NEW, "pay"): State.PAID,
    (State.NEW, "cancel"): State.CANCELLED,
    (State.PAID, "pack"): State.PACKED,
    (State.PAID, "cancel"): State.REFUNDED,
    (State.PACKED, "ship"): State.SHIPPED,
    (State.PACKED, "cancel"): State.REFUNDED,
    (State.SHIPPED, "deliver"): State.DELIVERED,
    (State.DELIVERED, "return"): State.REFUNDED,
}
FINAL = {State.CANCELLED, State.REFUNDED}


class TransitionError(Exception):
    """An event that the order's current state does not accept."""


class Order:
    def __init__(self, number, total_cents, clock=datetime.now):
        self.number = number
        self.total_cents = total_cents
        self.state = State.NEW
        self.clock = clock
        self.history = []  # (time, event, state before, state after)

    def can(self, event):
        return (self.state, event) in TRANSITIONS

    def fire(self, event):
        """Apply `event`; raise TransitionError when the current state does not accept it."""
        if self.state in FINAL:
            raise TransitionError(f"order {self.number} is {self.state.value}: no more changes")
        target = TRANSITIONS.get((self.state, event))
        if target is None:
            allowed = sorted(e for (s, e) in TRANSITIONS if s == self.state)
            raise TransitionError(f"cannot {event} a {self.state.value} order (can: {', '.join(allowed)})")
        self.history.append((self.clock(), event, self.state, target))
        log.info("order %s: %s -> %s", self.number, self.state.value, target.value)
        self.state = target
        return target

    def undo(self):
        """Go back one step (support only); returns the event that was undone."""
        if not self.history:
            raise TransitionError(f"order {self.number} has nothing to undo")
        _, event, before, _ = self.history.pop()
        self.state = before
        return event

    def refund_due(self):
        """Cents to pay back: everything once the order was paid, nothing if it never was."""
        if self.state is not State.REFUNDED:
            return 0
        return self.total_cents if any(after is State.PAID for _, _, _, after in self.history) else 0

    def timeline(self):
        """Human-readable history, one line per step."""
        return [f"{at:%Y-%m-%d %H:%M} {event}: {before.value} -> {after.value}"
                for at, event, before, after in self.history]


def replay(number, total_cents, events, clock=datetime.now):
    """An order with `events` applied in turn; the first refused event stops the replay."""
    order = Order(number, total_cents, clock)
    for event in events:
        if not order.can(event):
            break
        order.fire(event)
    return order


def count_by_state(orders):
    """{state value: number of orders}, every state listed (zero when none)."""
    counts = {state.value: 0 for state in State}
    for order in orders:
        counts[order.state.value] += 1
    return counts


def stuck_orders(orders, now, days=3):
    """Orders paid or packed whose last change is more than `days` days before `now`."""
    stuck = []
    for order in orders:
        if order.state in (State.PAID, State.PACKED) and order.history:
            last = order.history[-1][0]
            if (now - last).days > days:
                stuck.append(order.number)
    return stuck
