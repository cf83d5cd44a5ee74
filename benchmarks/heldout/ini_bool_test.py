def test_parse_bool(candidate):
    assert candidate("yes") is True and candidate(" Off ") is False and candidate("TRUE") is True
    assert candidate("0") is False and candidate("y") is True
    assert candidate(None) is False and candidate(None, default=True) is True
    assert candidate("", default=True) is True and candidate("   ") is False and candidate("\t", True) is True
    for bad in ("maybe", "2", "yes please"):
        try:
            candidate(bad, name="debug")
        except ValueError as exc:
            assert "debug" in str(exc)
        else:
            raise AssertionError(f"accepted {bad!r}")
