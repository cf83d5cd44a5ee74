def test_batched(candidate):
    assert list(candidate(range(7), 3)) == [[0, 1, 2], [3, 4, 5], [6]]
    assert list(candidate(range(6), 3)) == [[0, 1, 2], [3, 4, 5]]
    assert list(candidate([], 3)) == [] and list(candidate("ab", 5)) == [["a", "b"]]
    assert [len(b) for b in candidate(iter(range(250)))] == [100, 100, 50]
    words = ["aaaa", "bbbb", "c" * 20, "dd"]  # 7, 7, 23 and 5 bytes with their quotes and commas
    assert list(candidate(words, 10, max_bytes=15)) == [["aaaa", "bbbb"], ["c" * 20], ["dd"]]
    try:
        list(candidate([1, 2], 0))
    except ValueError:
        pass
    else:
        raise AssertionError("size 0 accepted")
