def test_retry(candidate):
    flaky = Flaky(2, "ok")
    assert candidate(attempts=3)(flaky)() == "ok" and flaky.calls == 3
    flaky = Flaky(5, "ok")
    try:
        candidate(attempts=2)(flaky)()
    except GaveUp as exc:
        assert len(exc.errors) == 2
    else:
        raise AssertionError("did not give up")
    slept = []
    flaky = Flaky(2, 7)
    assert candidate(attempts=4, base=1.0, sleep=slept.append)(flaky)() == 7 and slept == [1.0, 2.0]


def test_fetch(candidate):
    assert candidate(Flaky(1, {"id": 3})) == {"id": 3}
    assert candidate.__name__ == "fetch"


def test_delays(candidate):
    assert candidate(4, 1.0) == [1.0, 2.0, 4.0] and candidate(1) == []
