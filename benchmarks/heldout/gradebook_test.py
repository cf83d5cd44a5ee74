def test_quiz_average(candidate):
    assert candidate([90, 55, 80]) == 85.0 and candidate([40, 100, 70, 70]) == 80.0
    assert candidate([60, 80]) == 70.0 and candidate([]) == 0.0


def test_final_score(candidate):
    ann = Student("Ann", homework=[100, 90], quizzes=[100, 70, 90], exam=88, late_days=1)
    assert candidate(ann) == 90.9
    assert candidate(Student("Bo", [80], [80])) == 40.0
    assert candidate(ann, {"exam": 1.0}) == 88.0


def test_letter(candidate):
    assert [candidate(s) for s in (93, 92.9, 80, 79.9, 60, 59.9)] == ["A", "A-", "B-", "C+", "D", "F"]


def test_Course(candidate):
    course = candidate("CS101")
    course.enroll(Student("Ann", [100, 90], [100, 70, 90], 88, 1))
    course.enroll(Student("Cy", [60], [50, 40, 90], 65))
    course.enroll(Student("Di", [95], [95, 95], 95))
    try:
        course.enroll(Student("Cy"))
    except ValueError:
        pass
    else:
        raise AssertionError("enrolled a student twice")
    assert course.grades()["Cy"] == (64.5, "D")
    assert list(course.distribution().items()) == [("A", 1), ("A-", 1), ("D", 1)]
    assert course.summary() == "CS101: 3 students, mean 83.5, median 90.9, spread 13.5"


def test_at_risk(candidate):
    course = Course("X", [Student("A", [50], [50], 50), Student("B", [90], [90], 90), Student("C", [60], [60], 60)])
    assert candidate(course) == ["A", "C"] and candidate(course, 55) == ["A"]
