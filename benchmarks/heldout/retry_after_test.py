def test_retry_delay(candidate):
    now = datetime(2015, 10, 21, 7, 28, 0, tzinfo=UTC)
    assert candidate("120", now) == 120.0 and candidate(" 5 ", now) == 5.0 and candidate("100000", now) == 300.0
    assert candidate(None, now) == 1.0 and candidate("", now, default=2.0) == 2.0 and candidate("soon", now) == 1.0
    assert candidate("Wed, 21 Oct 2015 07:28:30 GMT", now) == 30.0
    assert candidate("Wed, 21 Oct 2015 07:27:55 GMT", now) == 0.0
    assert candidate("Tue, 20 Oct 2015 07:28:00 GMT", now) == 0.0
    assert candidate("Thu, 22 Oct 2015 07:28:00 GMT", now, cap=600.0) == 600.0
    assert candidate("Wed, 21 Oct 2015 07:30:00 GMT", now, cap=1e9) == 120.0
