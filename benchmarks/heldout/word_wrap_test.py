def test_wrap(candidate):
    text = "Show the difference between the file and the model's proposal, then ask before writing."
    for width in range(12, 60):
        lines = candidate(text, width)
        assert all(len(line) <= width for line in lines), (width, lines)
        assert " ".join(lines).split() == text.split()
    assert candidate("aaa bbb ccc", 7) == ["aaa bbb", "ccc"]
    assert candidate("aaa bbb ccc", 6) == ["aaa", "bbb", "ccc"]
    url = "https://example.com/a/very/long/path"
    assert candidate(f"see {url} now", 10) == ["see", url, "now"]
    assert candidate("one two\nthree\n\nfour", 20) == ["one two three", "", "four"]
