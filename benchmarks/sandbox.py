"""The one place where a case's tests run on code: edited modules are model output, i.e. untrusted.

Used by the bench (`run_tests`, `run_checks`) and by `benchmarks/build_cases.py` (`run_jobs`). Each call
starts one `python -I` subprocess in a scratch folder with limits on memory (address space), CPU time,
file size and output, and a wall-clock timeout that kills its whole process group. A test that allocates
too much, loops forever or prints megabytes therefore fails instead of hanging or sinking the runner.
Results are written one line per test as they come, so the tests before a kill keep their outcome.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

NOT_RUN = "NotRun"  # a test the subprocess did not reach (it was killed or crashed first)


@dataclass(frozen=True)
class Limits:
    """What one sandbox subprocess may use, all tests together (CPU, wall) or at any moment (memory)."""

    wall_seconds: float = 30.0
    cpu_seconds: int = 20  # below the wall clock: a busy loop ends on SIGXCPU first
    memory_bytes: int = 2 << 30  # RLIMIT_AS: a 2 GiB allocation fails with MemoryError
    output_bytes: int = 1 << 20  # per test on sys.stdout/stderr, and any file the process writes


@dataclass
class Outcome:
    """Per job, per test: True when it passed, else the name of the exception (NOT_RUN if never reached).

    `stopped` says why the subprocess ended early (timeout, a signal, a crash), None when every test ran.
    """

    results: list[list[bool | str]]
    stopped: str | None = None


# exec the module into a fresh namespace, the test into the same one, then check(namespace[entry_point]);
# some HumanEval checks draw random inputs, so `random` is seeded before each (a test may ask for its seed).
DRIVER = r"""
import json, random, sys
limits = json.loads(sys.argv[1])
try:
    import resource
except ImportError:  # not a POSIX system: the wall-clock timeout is the only limit
    resource = None
for name, value in (("RLIMIT_AS", limits["memory_bytes"]), ("RLIMIT_CPU", limits["cpu_seconds"]),
                    ("RLIMIT_FSIZE", limits["output_bytes"]), ("RLIMIT_CORE", 0)):
    if resource is not None and hasattr(resource, name):
        hard = resource.getrlimit(getattr(resource, name))[1]
        value = value if hard == resource.RLIM_INFINITY else min(value, hard)
        # CPU: SIGXCPU at the soft limit names the cause; SIGKILL a second later if a test ignores it
        soft_hard = (value, value + 1) if name == "RLIMIT_CPU" and hard == resource.RLIM_INFINITY else (value, value)
        try:
            resource.setrlimit(getattr(resource, name), soft_hard)
        except (ValueError, OSError):  # a platform that refuses this limit (macOS and RLIMIT_AS): the others hold
            pass


class OutputLimit(Exception):
    pass


class Sink:
    # stands in for sys.stdout/stderr during a test: counts what is written, keeps nothing
    def __init__(self):
        self.n = 0

    def write(self, s):
        self.n += len(s)
        if self.n > limits["output_bytes"]:
            raise OutputLimit(f"more than {limits['output_bytes']} characters of output")
        return len(s)

    def flush(self):
        pass


jobs = json.load(sys.stdin)
out = open(sys.argv[2], "w")
real = sys.stdout, sys.stderr
for job in jobs:
    for t in job["tests"]:
        sys.stdout = sys.stderr = Sink()
        try:
            ns = {"__name__": "__bench__"}
            exec(compile(job["source"], "module.py", "exec"), ns)
            exec(compile(t["test"], "test.py", "exec"), ns)
            random.seed(t.get("seed", 0))
            ns["check"](ns[t["entry_point"]])
            result = True
        except BaseException as exc:
            result = type(exc).__name__
        finally:
            sys.stdout, sys.stderr = real
        out.write(json.dumps(result) + "\n")
        out.flush()
"""


def run_jobs(jobs: list[dict], limits: Limits = Limits()) -> Outcome:
    """Run [{"source": module text, "tests": [{"test", "entry_point", "seed"?}, ...]}, ...] in one subprocess."""
    sizes = [len(job["tests"]) for job in jobs]
    with tempfile.TemporaryDirectory(prefix="editllm-sandbox-") as tmp:
        results_path, log_path = Path(tmp) / "results.jsonl", Path(tmp) / "stderr.txt"
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(
                [sys.executable, "-I", "-c", DRIVER, json.dumps(asdict(limits)), str(results_path)],
                stdin=subprocess.PIPE, stdout=log, stderr=log, cwd=tmp, start_new_session=True,
            )
            try:
                proc.communicate(json.dumps(jobs).encode(), timeout=limits.wall_seconds)
                stopped = None
            except subprocess.TimeoutExpired:
                stopped = f"timed out after {limits.wall_seconds} s"
            finally:
                _kill_group(proc)
        if stopped is None and proc.returncode != 0:
            signame = signal.Signals(-proc.returncode).name if proc.returncode < 0 else None
            tail = log_path.read_bytes()[-300:].decode(errors="replace").strip().splitlines()
            stopped = f"killed by {signame}" if signame else f"exit {proc.returncode}: {tail[-1] if tail else ''}"
        flat = _read_results(results_path)
    if len(flat) < sum(sizes) and stopped is None:
        stopped = "the driver stopped before the last test"
    flat += [NOT_RUN] * (sum(sizes) - len(flat))
    rows, at = [], 0
    for n in sizes:
        rows.append(flat[at:at + n])
        at += n
    return Outcome(rows, stopped)


def _kill_group(proc: subprocess.Popen) -> None:
    """End the subprocess and anything it started (it leads its own session)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


def _read_results(path: Path) -> list[bool | str]:
    results: list[bool | str] = []
    if path.exists():
        for line in path.read_text(errors="replace").splitlines():
            try:
                results.append(json.loads(line))
            except json.JSONDecodeError:
                break  # a line cut short by the kill
    return results


def run_checks(sources: list[str], tests: list[dict], limits: Limits = Limits()) -> list[list[bool]]:
    """For each source, whether each test passes; all in one subprocess (a test past a limit fails, and
    so do the tests it kept from running)."""
    outcome = run_jobs([{"source": src, "tests": tests} for src in sources], limits)
    return [[r is True for r in row] for row in outcome.results]


def run_tests(source: str, tests: list[dict], limits: Limits = Limits()) -> bool | None:
    """All of a case's tests pass on `source` (None when the case has no tests)."""
    return all(run_checks([source], tests, limits)[0]) if tests else None
