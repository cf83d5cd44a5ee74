"""Bug injection by program: one-line mutations of a function that change what it computes.

Shared by the bench (`benchmarks/build_cases.py`, which verifies each bug against HumanEval tests)
and by training data synthesis (which applies them to public library code). Nine kinds: comparison
operators and constants, membership, arithmetic and boolean operators, range/slice bounds, index
offsets and a wrong returned variable. Each mutation is a byte-range edit of one line; only edits
that still parse and change the AST are kept.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from dataclasses import dataclass


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
    """Collects the candidate mutations of one function."""

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


def instruction_bugfix(funcs: list[str]) -> str:
    if len(funcs) == 1:
        return f"Fix the bug in `{funcs[0]}`: its tests fail."
    return f"Fix the bugs in `{funcs[0]}` and `{funcs[1]}`: their tests fail."


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
