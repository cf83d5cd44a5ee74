"""The bench's one test driver (editllm.bench.sandbox): its limits bite, and a test that breaks one
fails that test instead of hanging or sinking the runner; the tests before it keep their outcome."""

from __future__ import annotations

import time

from editllm.bench.sandbox import NOT_RUN, Limits, run_checks, run_jobs

OK = {"test": "def check(f):\n    assert f() == 1\n", "entry_point": "f"}
GOOD = "def f():\n    return 1\n"
LIMITS = Limits(wall_seconds=20, cpu_seconds=2, memory_bytes=1 << 30, output_bytes=64 << 10)


def job(body: str) -> dict:
    """A module whose f() runs `body` then returns 1; its one test passes unless `body` breaks a limit."""
    return {"source": "import os, sys, time\n\ndef f():\n" + "".join(f"    {x}\n" for x in body.split("\n"))
            + "    return 1\n", "tests": [OK]}


def test_a_module_that_passes_passes():
    outcome = run_jobs([{"source": GOOD, "tests": [OK, OK]}], LIMITS)
    assert outcome.results == [[True, True]] and outcome.stopped is None


def test_too_much_memory_fails_that_test_only():
    outcome = run_jobs([job("x = bytearray(2 << 30)"), {"source": GOOD, "tests": [OK]}], LIMITS)
    assert outcome.results == [["MemoryError"], [True]] and outcome.stopped is None


def test_megabytes_of_output_fail_that_test_only():
    printed = job("for _ in range(1000): print('x' * 1000)")
    written = job("sys.stderr.write('y' * (1 << 20))")
    raw = job("for _ in range(64): os.write(1, b'z' * 65536)")  # past sys.stdout: the file-size limit
    outcome = run_jobs([printed, written, raw, {"source": GOOD, "tests": [OK]}], LIMITS)
    assert outcome.results == [["OutputLimit"], ["OutputLimit"], ["OSError"], [True]]


def test_an_endless_loop_is_stopped_by_the_cpu_limit_and_earlier_results_are_kept():
    start = time.perf_counter()
    outcome = run_jobs([{"source": GOOD, "tests": [OK]}, job("while True: pass"), {"source": GOOD, "tests": [OK]}],
                       LIMITS)
    assert time.perf_counter() - start < 15  # well before the wall clock
    assert outcome.results == [[True], [NOT_RUN], [NOT_RUN]] and outcome.stopped == "killed by SIGXCPU"


def test_a_sleeping_test_is_stopped_by_the_wall_clock_with_its_children():
    source = job("import subprocess\nsubprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
                 "time.sleep(60)")
    start = time.perf_counter()
    outcome = run_jobs([source], Limits(wall_seconds=2))
    assert time.perf_counter() - start < 10
    assert outcome.results == [[NOT_RUN]] and "timed out" in outcome.stopped
    assert run_checks([GOOD], [OK], Limits(wall_seconds=2)) == [[True]]  # the runner is fine afterwards
