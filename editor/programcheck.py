"""Checks of a copy program's text that send copy mode back to spec mode.

A copy program is mostly line numbers, and a wrong number breaks code that still parses. Measured on real
files with the bundled model (2026-11 probe, 8 copy-mode edits, 3 of them wrong this way): a program that
wrote `raise TypeError(...)` in place of `if isinstance(val, str):` and then copied the indented line after it
(now unreachable, and the old behaviour gone); one that left out a method's `def` line, so its body ran on
after the new method's `return`; one whose gen span wrote `os.remove(...)` again and then copied it. Each
parsed, each was exit 0. Spec mode is the lossless reference, so a program with one of these signs is not
used: copy mode falls back to spec (`editor.edit.edit_copy`), at the cost of time only.

- code after a `return`, `raise`, `continue` or `break` in the same block, where the shown text had less
  (none of the 1,080 Python before/after pairs of the training data and bench cases has more after);
- a gen span that writes again a line the copy right before or after it also copies (a distinctive line:
  16 characters at least, not a comment), the commonest off-by-one of a copy boundary. Over whole texts the
  rule "a line the file has once is written twice" flagged 30 of those 1,121 correct pairs (a docstring line
  like a sibling's, `return x` in two branches), so only the program's own seams are judged, and lines that end
  a block (`return x`, `raise`, `pass`) never count: of the 1,121 pairs' oracle programs one is flagged (a
  `super()._make_methods()` call the edit really repeats), which costs it a spec run, no more.

- a gen span whose line is a new version of the line the copy beside it copies (at the same indentation, 85 %
  alike: `then(async mani =>` written, `then(mani =>` copied after it), the model's rewrite of a line it then
  kept too: a JS file left with two openings, exit 0, in the second probe (2026-11-27). Of the 1,121 pairs'
  oracle programs two are flagged (a line the edit really writes beside one much like it).

Rewrite and spec outputs are not judged here: an early `return` the user asks for ("make f a no-op")
leaves dead code on purpose, and those modes write what the model wrote.
"""

from __future__ import annotations

import ast
import difflib

from editllm.editor.blocks import indent_of
from editllm.editor.errors import EditError
from editllm.editor.languages import PYTHON
from editllm.editor.source import python_tree, split_lines
from editllm.grammar.program import Copy, Gen, Op, ProgramError, parse

DISTINCT = 16  # characters a line needs (stripped) to count as distinctive
ECHO = 0.85  # how alike a new line and the old one copied beside it must be to be one line written twice
# Lines a new branch may well repeat beside the same line copied (`return default_config` in a new `except`):
# comments, and statements that end a block.
COMMON = ("#", "//", "return ", "return;", "raise ", "yield", "pass", "break", "continue", "}")
ENDS = (ast.Return, ast.Raise, ast.Continue, ast.Break)


def unreachable(text: str) -> list[int] | None:
    """Line numbers of statements that follow a `return`/`raise`/`continue`/`break` in the same block; None
    when the text does not parse (judged elsewhere)."""
    tree = python_tree(text)
    if tree is None:
        return None
    found: list[int] = []
    for node in ast.walk(tree):
        for name in ("body", "orelse", "finalbody"):
            block = getattr(node, name, None)
            if not isinstance(block, list):
                continue
            ends = next((k for k, stmt in enumerate(block) if isinstance(stmt, ENDS)), None)
            if ends is not None:  # a bare `yield` after `raise` makes an abstract method a generator: on purpose
                found += [stmt.lineno for stmt in block[ends + 1:] if isinstance(stmt, ast.stmt)
                          and not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Yield | ast.YieldFrom))]
    return sorted(found)


def seams(ops: list[Op], k: int, shown: list[str]) -> list[tuple[str | None, str]]:
    """Where gen span `ops[k]` meets a copy: (the gen's own line at that seam, the line the copy takes there),
    for the copy right after it (its first line) and right before it (its last line)."""
    wrote = [line.rstrip() for line in ops[k].text.splitlines() if line.strip()]
    found = []
    if k + 1 < len(ops) and isinstance(ops[k + 1], Copy):
        found.append((wrote[-1] if wrote else None, shown[ops[k + 1].i - 1].rstrip()))
    if k and isinstance(ops[k - 1], Copy):
        found.append((wrote[0] if wrote else None, shown[ops[k - 1].j - 1].rstrip()))
    return found


def overlap(ops: list[Op], shown: list[str]) -> str | None:
    """A distinctive line that a gen span writes and the copy next to it copies too, or writes anew and the
    copy takes in its old form, else None."""
    for k, op in enumerate(ops):
        if not isinstance(op, Gen):
            continue
        wrote = {line.strip() for line in op.text.splitlines()}
        at = seams(ops, k, shown)
        for _, theirs in at:
            key = theirs.strip()
            if len(key) >= DISTINCT and not key.startswith(COMMON) and key in wrote:
                return key
        echo = rewritten_and_copied(at)
        if echo is not None:
            return echo
    return None


def rewritten_and_copied(at: list[tuple[str | None, str]]) -> str | None:
    """At a gen span's seams (`seams`), its line that is a new version of the line the copy beside it takes,
    else None: the model wrote the line anew and copied the old one too (`return
    this.manifest().then(async mani => ({` above `return this.manifest().then(mani => ({`: two openings, one
    syntax error). None of the 1,121 correct pairs' oracle programs has one."""
    for mine, theirs in at:  # at the same indentation: `return x + 1` in a new branch above `return x` is not
        if mine is not None and len(theirs.strip()) >= DISTINCT and not theirs.lstrip().startswith(("#", "//")) \
                and mine != theirs and indent_of(mine) == indent_of(theirs) \
                and difflib.SequenceMatcher(None, mine, theirs, autojunk=False).ratio() >= ECHO:
            return mine.strip()
    return None


def check_program_text(path: str, shown: str, text: str, program: str, lines: list[str] | None = None) -> None:
    """Raise EditError (copy mode then falls back to spec) when a program (`program`, resolved over `shown`
    into `text`) has one of the signs above. `lines`: `split_lines(shown)`, when the caller has it."""
    lines = split_lines(shown) if lines is None else lines
    try:
        ops = parse(program)
        line = overlap(ops, lines)
    except (ProgramError, IndexError):  # not this file's program (resolving it already worked): nothing to say
        line = None
    if line is not None:
        raise EditError(f"{path}: the program writes {line[:60]!r} and copies it too")
    if not path.endswith(PYTHON):
        return
    before, after = unreachable(shown), unreachable(text)
    if before is not None and after is not None and len(after) > len(before):
        new = sorted(set(after) - set(before)) or after
        raise EditError(f"{path}: the program leaves code that never runs after a return or raise (line {new[0]})")
