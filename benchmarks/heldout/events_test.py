def test_EventBus(candidate):
    bus = candidate()
    got = []
    bus.once("save", lambda p: got.append(("once", p)))
    bus.subscribe("save", lambda p: got.append(("always", p)))
    bus.subscribe("save", lambda p: 1 / 0)
    assert bus.publish("save", 1) == 3
    assert bus.publish("save", 2) == 2
    assert got == [("once", 1), ("always", 1), ("always", 2)] and bus.count("save") == 2
    assert bus.count("load") == 0 and bus.history == ["save", "save"]


def test_collect(candidate):
    bus = EventBus()
    seen = candidate(bus, "x")
    bus.publish("x", 5)
    assert seen == [5]
