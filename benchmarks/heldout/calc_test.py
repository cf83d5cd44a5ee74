def test_tokenize(candidate):
    assert candidate("qty*2.5 - (x)") == [("name", "qty"), ("op", "*"), ("num", 2.5), ("op", "-"),
                                          ("lparen", "("), ("name", "x"), ("rparen", ")")]
    assert candidate(" .5+1. ") == [("num", 0.5), ("op", "+"), ("num", 1.0)]
    try:
        candidate("2 # 3")
    except FormulaError as exc:
        assert "column 3" in str(exc)
    else:
        raise AssertionError("accepted '#'")


def test_to_postfix(candidate):
    values = [v for _, v in candidate(tokenize("1 - 2 - 3 * 4 ^ 2 ^ 3"))]
    assert values == [1.0, 2.0, "-", 3.0, 4.0, 2.0, 3.0, "^", "^", "*", "-"]
    assert [v for _, v in candidate(tokenize("-(a + b)"))] == ["a", "b", "+", "neg"]
    for bad in ("(1 + 2", "1 + 2)"):
        try:
            candidate(tokenize(bad))
        except FormulaError:
            pass
        else:
            raise AssertionError(f"accepted {bad!r}")


def test_evaluate(candidate):
    assert candidate([("num", 8.0), ("name", "d"), ("op", "/")], {"d": 2}) == 4.0
    for postfix in ([("num", 1.0), ("num", 0.0), ("op", "/")], [("name", "z")], [("num", 1.0), ("op", "+")]):
        try:
            candidate(postfix)
        except FormulaError:
            pass
        else:
            raise AssertionError(f"computed {postfix}")


def test_calculate(candidate):
    assert candidate("qty * rate", qty=3, rate=2.5) == 7.5
    assert candidate("2^3^2") == 512.0 and candidate("(2^3)^2") == 64.0
    assert candidate("-2^2") == -4.0 and candidate("10 - 4 - 3") == 3.0 and candidate("2 * -3") == -6.0
    assert candidate("2^-1") == 0.5 and candidate("--x", x=4) == 4.0
