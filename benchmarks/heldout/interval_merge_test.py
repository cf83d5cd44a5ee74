def test_merge_bookings(candidate):
    assert candidate([(600, 660), (540, 600), (720, 780)]) == [(540, 660), (720, 780)]
    assert candidate([(540, 720), (600, 660)]) == [(540, 720)]
    assert candidate([(540, 600), (570, 630), (620, 700), (800, 810)]) == [(540, 700), (800, 810)]
    assert candidate([]) == [] and candidate([(600, 600)]) == [(600, 600)]
    try:
        candidate([(600, 540)])
    except ValueError:
        pass
    else:
        raise AssertionError("accepted a booking that ends before it starts")
