EXPORT = """name,department,hours,rate,bonus
Ann,Sales,45,20,100
Bob,Sales,40,20,
Cid,Ops,10,30,0
Dee,Ops (ext),50,40

"""


def test_Employee(candidate):
    assert candidate("a", "x", 45, 20, 100).pay() == 1050.0 and candidate("a", "x", 30, 10).pay() == 300.0


def test_Contractor(candidate):
    assert candidate("d", "x", 50, 40).pay() == 2000.0


def test_parse_rows(candidate):
    people = candidate(EXPORT)
    assert [type(p).__name__ for p in people] == ["Employee", "Employee", "Employee", "Contractor"]
    assert people[3].department == "Ops" and people[1].bonus == 0.0
    try:
        candidate("name,department,hours,rate\nX,Y,many,1\n")
    except ExportError as exc:
        assert "line 2" in str(exc)
    else:
        raise AssertionError("accepted a bad row")


def test_department_summary(candidate):
    assert candidate(parse_rows(EXPORT)) == {"Sales": (2, 1850.0, 925.0), "Ops": (2, 2300.0, 1150.0)}


def test_top_earners(candidate):
    assert candidate(parse_rows(EXPORT), 2) == ["Dee", "Ann"]


def test_report(candidate):
    assert candidate(EXPORT) == ("Ops: 2 people, total 2300.00, average 1150.00\n"
                                 "Sales: 2 people, total 1850.00, average 925.00\nmedian: 925.00")
