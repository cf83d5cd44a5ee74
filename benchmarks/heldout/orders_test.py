class Ticks:
    """A clock that moves one hour per call."""

    def __init__(self):
        self.calls = 0

    def __call__(self):
        self.calls += 1
        return datetime(2024, 6, 1, self.calls)


def test_Order(candidate):
    order = candidate(7, 2500, Ticks())
    assert order.fire("pay") is State.PAID and order.fire("pack") is State.PACKED
    try:
        order.fire("deliver")
    except TransitionError as exc:
        assert "can: cancel, ship" in str(exc)
    else:
        raise AssertionError("delivered a packed order")
    assert order.undo() == "pack" and order.state is State.PAID
    assert order.undo() == "pay" and order.state is State.NEW and order.history == []
    order.fire("pay")
    assert order.timeline() == ["2024-06-01 03:00 pay: new -> paid"]
    order.fire("cancel")
    assert order.refund_due() == 2500 and not order.can("pay")


def test_replay(candidate):
    order = candidate(1, 100, ["pay", "pack", "deliver", "ship"], Ticks())
    assert order.state is State.PACKED and len(order.history) == 2
    assert candidate(2, 100, ["cancel"], Ticks()).refund_due() == 0


def test_count_by_state(candidate):
    orders = [replay(n, 1, events, Ticks()) for n, events in enumerate([["pay"], ["pay", "pack"], [], ["pay"]])]
    counts = candidate(orders)
    assert counts["paid"] == 2 and counts["packed"] == 1 and counts["new"] == 1 and counts["refunded"] == 0


def test_stuck_orders(candidate):
    orders = [replay(1, 1, ["pay"], Ticks()), replay(2, 1, ["pay", "pack", "ship"], Ticks())]
    assert candidate(orders, datetime(2024, 6, 6)) == [1] and candidate(orders, datetime(2024, 6, 3)) == []
