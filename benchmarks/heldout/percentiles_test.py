def test_percentile(candidate):
    samples = [120, 35, 80, 15, 400, 60, 95, 20, 45, 70]
    assert candidate(samples, 50) == 65.0 and candidate(samples, 0) == 15 and candidate(samples, 100) == 400
    assert abs(candidate(samples, 95) - 274.0) < 1e-9 and abs(candidate(samples, 90) - 148.0) < 1e-9
    assert candidate(sorted(samples), 50) == 65.0 and candidate([7], 99) == 7 and candidate([], 50) is None
    assert candidate((x for x in [3, 1, 2]), 50) == 2
    for bad in (-1, 100.5):
        try:
            candidate(samples, bad)
        except ValueError:
            pass
        else:
            raise AssertionError(f"accepted percentile {bad}")
