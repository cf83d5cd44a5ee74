def test_csv_line(candidate):
    assert candidate(["pizza", 12, None, 3.5]) == "pizza,12,,3.5"
    assert candidate(["Smith, John", "ok"]) == '"Smith, John",ok'
    assert candidate(['12" pizza', "large"]) == '"12"" pizza",large'
    assert candidate(['say "hi"']) == '"say ""hi"""'
    assert candidate(["two\nlines", " padded"]) == '"two\nlines"," padded"'
    assert candidate(["a;b", "c,d"], delimiter=";") == '"a;b";c,d'
    assert candidate([]) == "" and candidate([""]) == ""
