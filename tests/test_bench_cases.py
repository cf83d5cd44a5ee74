"""The benchmark cases in benchmarks/cases/*.jsonl (built by benchmarks/build_cases.py) are well formed:
`after` passes every test of its case and `before` fails at least one. One subprocess per case."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from editllm.bench.sandbox import Limits, run_checks

CASES_DIR = Path(__file__).resolve().parents[1] / "benchmarks" / "cases"
FILES = {"humaneval_bugfix.jsonl": "bugfix", "rename.jsonl": "rename", "humaneval_single.jsonl": "bugfix-single"}
BUGFIX_KINDS = {"bugfix", "bugfix-single"}
LINES = {"bugfix": (30, 300), "rename": (30, 300), "bugfix-single": (10, 40)}  # module sizes, inclusive
TIMEOUT = 30.0

def run_sources(sources: list[str], tests: list[dict], timeout: float = TIMEOUT) -> list[list[bool]]:
    """For each source, whether each test passes: the bench's own runner."""
    return run_checks(sources, tests, Limits(wall_seconds=timeout))


def _load() -> list:
    params = []
    for name, kind in FILES.items():
        path = CASES_DIR / name
        if not path.exists():
            params.append(pytest.param(name, None, id=name, marks=pytest.mark.skip(reason=f"{path} is missing")))
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            case = json.loads(line)
            params.append(pytest.param(kind, case, id=f"{name}:{n}:{case.get('id')}"))
    return params


CASES = _load()


def test_ids_and_paths_unique():
    cases = [p.values[1] for p in CASES if p.values[1] is not None]
    if not cases:
        pytest.skip("no benchmark cases")
    assert len({c["id"] for c in cases}) == len(cases)
    assert len({c["path"] for c in cases}) == len(cases)


def test_single_cases_use_fresh_functions():
    """No function of a single-problem module is the target of a bugfix or rename instruction."""
    cases = [p.values[1] for p in CASES if p.values[1] is not None]
    single = [c for c in cases if c["kind"] == "bugfix-single"]
    if not single:
        pytest.skip("no single-problem bug-fix cases")
    named = {n for c in cases if c["kind"] != "bugfix-single" for n in re.findall(r"`(\w+)`", c["instruction"])}
    for c in single:
        defined = set(re.findall(r"^def (\w+)\(", c["after"], re.M))
        assert not defined & named, c["id"]


@pytest.mark.parametrize("kind, case", CASES)
def test_case(kind: str, case: dict):
    assert set(case) == {"id", "kind", "path", "instruction", "before", "after", "tests", "lines"}
    assert case["kind"] == kind
    assert isinstance(case["id"], str) and case["id"]
    assert re.fullmatch(r"module_\d\d+\.py", case["path"])
    assert isinstance(case["instruction"], str) and case["instruction"]
    assert isinstance(case["before"], str) and isinstance(case["after"], str)
    assert case["before"] != case["after"]
    assert case["lines"] == len(case["before"].splitlines())
    lo, hi = LINES[kind]
    assert lo <= case["lines"] <= hi
    assert isinstance(case["tests"], list) and case["tests"]
    for t in case["tests"]:
        assert set(t) == {"test", "entry_point"}
        assert "def check(candidate)" in t["test"]
        assert t["entry_point"].isidentifier()
    compile(case["before"], case["path"], "exec")
    compile(case["after"], case["path"], "exec")

    before, after = case["before"].splitlines(), case["after"].splitlines()
    if kind in BUGFIX_KINDS:
        names = re.findall(r"`(\w+)`", case["instruction"])
        assert case["instruction"].startswith("Fix the bug") and 1 <= len(names) <= 2
        assert len(before) == len(after)
        changed = [i for i, (a, b) in enumerate(zip(before, after, strict=True)) if a != b]
        assert len(changed) == len(names)  # one changed line per bug
        assert {t["entry_point"] for t in case["tests"]} >= set(names)
        if kind == "bugfix-single":  # one HumanEval problem, one bug
            assert case["instruction"] == f"Fix the bug in `{names[0]}`: its tests fail."
            assert [t["entry_point"] for t in case["tests"]] == names
    else:
        old, new = re.fullmatch(r"Rename the function `(\w+)` to `(\w+)` and update every call site\.",
                                case["instruction"]).groups()
        assert re.search(rf"^def {old}\(", case["before"], re.M)
        assert re.search(rf"^def {new}\(", case["after"], re.M)
        assert not re.search(rf"\b{new}\b", case["before"])
        assert new in {t["entry_point"] for t in case["tests"]}

    after_ok, before_ok = run_sources([case["after"], case["before"]], case["tests"])
    failing = [t["entry_point"] for t, ok in zip(case["tests"], after_ok, strict=True) if not ok]
    assert not failing, f"`after` fails the checks of {failing}"
    assert not all(before_ok), "`before` passes every test"
    if kind in BUGFIX_KINDS:
        broken = {t["entry_point"] for t, ok in zip(case["tests"], before_ok, strict=True) if not ok}
        assert broken == set(names)
