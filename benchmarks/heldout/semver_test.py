def test_Version(candidate):
    assert str(candidate(1, 2, 3, ("rc", 1))) == "1.2.3-rc.1"
    assert candidate(1, 0, 0, ("rc", 2)) < candidate(1, 0, 0, ("rc", 10)) < candidate(1, 0, 0)
    assert candidate(1, 0, 0, (2,)) < candidate(1, 0, 0, ("alpha",)) and candidate(1, 9, 0) < candidate(1, 10, 0)


def test_parse(candidate):
    assert candidate(" v1.10.3-beta.2 ") == Version(1, 10, 3, ("beta", 2))
    assert candidate("2.0.0") > candidate("1.10.0") > candidate("1.9.9")
    for bad in ("1.2", "1.2.3.4", "x.y.z"):
        try:
            candidate(bad)
        except VersionError:
            pass
        else:
            raise AssertionError(f"parsed {bad!r}")


def test_bump(candidate):
    assert str(candidate(parse("1.9.9"), "minor")) == "1.10.0" and str(candidate(parse("1.4.2"), "major")) == "2.0.0"
    assert str(candidate(parse("1.4.2"), "patch")) == "1.4.3"
    assert str(candidate(parse("2.0.0-rc.1"), "patch")) == "2.0.0"


def test_bounds(candidate):
    assert [str(v) for v in candidate("^1.2.3")] == ["1.2.3", "2.0.0"]
    assert [str(v) for v in candidate("~1.2.3")] == ["1.2.3", "1.3.0"]
    assert [str(v) for v in candidate("^0.2.3")] == ["0.2.3", "0.3.0"]


def test_satisfies(candidate):
    assert candidate("1.10.0", "^1.2.0") and candidate("1.10.0", ">=1.9.0 <2.0.0")
    assert not candidate("2.0.0", "^1.2.0") and not candidate("0.5.0", "^0.2.3") and candidate("0.2.9", "^0.2.3")
    assert candidate("1.2.3", "=1.2.3") and candidate("1.2.3", "1.2.3") and not candidate("1.3.0", "~1.2.0")


def test_best_match(candidate):
    available = ["1.2.0", "1.9.0", "1.10.0", "2.0.0-rc.1", "0.2.5", "0.4.0"]
    assert candidate(available, "^1.0.0") == "1.10.0" and candidate(available, "^0.2.0") == "0.2.5"
    assert candidate(available, ">=1.10.0", allow_pre=True) == "2.0.0-rc.1" and candidate(available, "^3.0.0") is None


def test_changelog_order(candidate):
    assert candidate(["1.9.0", "1.10.0", "1.10.0-rc.1", "0.9.12"]) == ["1.10.0", "1.10.0-rc.1", "1.9.0", "0.9.12"]
