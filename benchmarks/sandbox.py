"""Running a case's tests on edited code: model output is untrusted, so it runs in a subprocess."""

from __future__ import annotations

import json
import subprocess
import sys

# exec the module into a fresh namespace, the test into the same one, then check(namespace[entry_point]);
# some HumanEval checks draw random inputs, so `random` is seeded before each.
TEST_DRIVER = r"""
import io, json, random, sys
jobs = json.load(sys.stdin)
real_stdout = sys.stdout
results = []
for job in jobs:
    row = []
    for t in job["tests"]:
        sys.stdout = io.StringIO()
        try:
            ns = {"__name__": "__bench__"}
            exec(compile(job["source"], "module.py", "exec"), ns)
            exec(compile(t["test"], "test.py", "exec"), ns)
            random.seed(0)
            ns["check"](ns[t["entry_point"]])
            row.append(True)
        except BaseException:
            row.append(False)
        finally:
            sys.stdout = real_stdout
    results.append(row)
real_stdout.write(json.dumps(results))
"""


def run_checks(sources: list[str], tests: list[dict], timeout: float = 30.0) -> list[list[bool]]:
    """For each source, whether each test passes; all in one subprocess (a hang fails them all)."""
    jobs = [{"source": src, "tests": tests} for src in sources]
    try:
        res = subprocess.run([sys.executable, "-I", "-c", TEST_DRIVER], input=json.dumps(jobs),
                             capture_output=True, text=True, timeout=timeout)
        return json.loads(res.stdout)
    except (subprocess.TimeoutExpired, json.JSONDecodeError):
        return [[False] * len(tests) for _ in sources]


def run_tests(source: str, tests: list[dict], timeout: float = 30.0) -> bool | None:
    """All of a case's tests pass on `source` (None when the case has no tests)."""
    return all(run_checks([source], tests, timeout)[0]) if tests else None
