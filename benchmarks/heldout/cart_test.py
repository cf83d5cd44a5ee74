def test_Cart(candidate):
    a, b = candidate(), candidate()
    a.add("tea", "2.50", 2)
    a.add("tea", "2.50")
    assert [(x.name, x.quantity) for x in a.lines] == [("tea", 3)] and b.lines == []
    b.add("cake", "4.00")
    assert [x.name for x in a.lines] == ["tea"]
    a.code = "save10"
    assert a.total() == Decimal("6.75")
    a.remove("tea")
    assert a.total() == Decimal("0.00")


def test_merge(candidate):
    a, b = Cart(), Cart(code="HALF")
    a.add("tea", "1.00")
    b.add("tea", "1.00", 2)
    b.add("jam", "3.00")
    m = candidate(a, b)
    assert [(x.name, x.quantity) for x in m.lines] == [("tea", 3), ("jam", 1)] and m.total() == Decimal("3.00")
    assert [(x.name, x.quantity) for x in a.lines] == [("tea", 1)]


def test_money(candidate):
    assert candidate("2.345") == Decimal("2.35") and candidate("2.344") == Decimal("2.34")
