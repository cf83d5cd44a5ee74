def test_paginate(candidate):
    items = list(range(1, 26))
    assert candidate(items, 1) == list(range(1, 11))
    assert candidate(items, 3) == [21, 22, 23, 24, 25]
    assert candidate(items, 4) == []
    assert candidate(items, 2, per_page=5) == [6, 7, 8, 9, 10]


def test_page_count(candidate):
    assert candidate(0, 10) == 1 and candidate(25, 10) == 3 and candidate(30, 10) == 3


def test_page_links(candidate):
    assert candidate(5, 9) == [1, None, 3, 4, 5, 6, 7, None, 9]
    assert candidate(1, 3) == [1, 2, 3]


def test_summary(candidate):
    assert candidate(2, 10, 45) == "Showing 11-20 of 45"
    assert candidate(5, 10, 45) == "Showing 41-45 of 45"
    assert candidate(1, 10, 0) == "No results"
