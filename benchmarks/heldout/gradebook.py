"""Course gradebook: weighted categories, a dropped lowest quiz, letter grades and a class summary.

Scores are percentages (0-100). A student's final grade weighs homework, quizzes and the exam as
the course's `weights` say; the lowest quiz does not count when there are at least three.
"""

import statistics
from dataclasses import dataclass, field

LETTERS = [(93, "A"), (90, "A-"), (87, "B+"), (83, "B"), (80, "B-"), (77, "C+"), (73, "C"), (70, "C-"),
           (60, "D"), (0, "F")]
DEFAULT_WEIGHTS = {"homework": 0.3, "quizzes": 0.2, "exam": 0.5}


@dataclass
class Student:
    name: str
    homework: list[float] = field(default_factory=list)
    quizzes: list[float] = field(default_factory=list)
    exam: float | None = None
    late_days: int = 0


def mean(scores: list[float]) -> float:
    """The average, or 0.0 for no scores (nothing handed in counts as zero)."""
    return sum(scores) / len(scores) if scores else 0.0


def quiz_average(quizzes: list[float]) -> float:
    """Average quiz score; with three quizzes or more, the lowest one is dropped."""
    if len(quizzes) >= 3:
        kept = sorted(quizzes)[1:]
    else:
        kept = list(quizzes)
    return mean(kept)


def late_penalty(late_days: int) -> float:
    """Points off the homework average: 2 per late day, at most 10."""
    return min(2.0 * late_days, 10.0)


def final_score(student: Student, weights: dict[str, float] = DEFAULT_WEIGHTS) -> float:
    """Weighted score out of 100, rounded to one decimal; a missing exam counts as zero."""
    homework = max(mean(student.homework) - late_penalty(student.late_days), 0.0)
    parts = {
        "homework": homework,
        "quizzes": quiz_average(student.quizzes),
        "exam": student.exam or 0.0,
    }
    total_weight = sum(weights.values())
    return round(sum(parts[k] * w for k, w in weights.items()) / total_weight, 1)


def letter(score: float) -> str:
    for cutoff, grade in LETTERS:
        if score >= cutoff:
            return grade
    return "F"


@dataclass
class Course:
    code: str
    students: list[Student] = field(default_factory=list)
    weights: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_WEIGHTS))

    def enroll(self, student: Student) -> None:
        if any(s.name == student.name for s in self.students):
            raise ValueError(f"{student.name} is already enrolled in {self.code}")
        self.students.append(student)

    def grades(self) -> dict[str, tuple[float, str]]:
        """{name: (score, letter)} for every enrolled student."""
        out = {}
        for s in self.students:
            score = final_score(s, self.weights)
            out[s.name] = (score, letter(score))
        return out

    def distribution(self) -> dict[str, int]:
        """How many students got each letter, best letters first, letters nobody got left out."""
        counts: dict[str, int] = {}
        for _, grade in self.grades().values():
            counts[grade] = counts.get(grade, 0) + 1
        order = [g for _, g in LETTERS]
        return dict(sorted(counts.items(), key=lambda kv: order.index(kv[0])))

    def summary(self) -> str:
        """The line printed at the bottom of the grade sheet."""
        scores = [score for score, _ in self.grades().values()]
        if not scores:
            return f"{self.code}: no students"
        spread = statistics.pstdev(scores)
        return (f"{self.code}: {len(scores)} students, mean {statistics.mean(scores):.1f}, "
                f"median {statistics.median(scores):.1f}, spread {spread:.1f}")


def at_risk(course: Course, threshold: float = 70.0) -> list[str]:
    """Names of students below `threshold`, lowest score first."""
    graded = course.grades()
    low = [(score, name) for name, (score, _) in graded.items() if score < threshold]
    return [name for _, name in sorted(low)]
