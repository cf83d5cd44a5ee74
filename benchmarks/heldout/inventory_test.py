def test_Warehouse(candidate):
    w = candidate()
    w.add(Item("ABC-0001", 2.5, 4))
    w.add(Item("ABC-0001", 2.5, 2))
    w.add(Item("XYZ-0002", 10.0, 1))
    assert w.total_value() == 25.0
    assert w.ship("ABC-0001", 5).quantity == 5 and w.items["ABC-0001"].quantity == 1
    try:
        w.ship("XYZ-0002", 2)
    except ValueError:
        pass
    else:
        raise AssertionError("shipped more than in stock")


def test_Store(candidate):
    s = candidate()
    s.receive(Item("ABC-0001", 2.5, 4))
    s.receive(Item("ABC-0001", 2.5, 2))
    s.receive(Item("XYZ-0002", 10.0, 1))
    assert s.total_value() == 25.0
    assert s.low_stock() == ["XYZ-0002"]


def test_valid_sku(candidate):
    assert candidate("ABC-1234") and not candidate("abc-1234") and not candidate("ABC-12345")
