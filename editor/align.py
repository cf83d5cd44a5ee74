"""Line alignment of two versions of a file, for every check and the diff that compares them line by line.

difflib's `SequenceMatcher` finds the longest matching run first, and looks for it through every copy of each
line: a file of many repeated lines (`},` in JSON, blank lines, `}` in CSS) costs it the square of their count.
An 18,000-line JSON file took 1.5 s an alignment, four alignments an edit, with the output unchanged (session 31).
An edit touches a few lines: the lines both versions open and close with are equal whatever the alignment, so,
as diff tools do (git's xdiff, GNU diff), they are matched first and difflib aligns only the stretch between.
Where difflib alone would match a repeated line elsewhere (one of two identical lines inserted: before or after
the one kept), the result is another alignment of the same edit, the one `diff` itself prints.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence
from functools import lru_cache

Opcode = tuple[str, int, int, int, int]


def line_opcodes(old: Sequence[str], new: Sequence[str], junk: Callable[[str], bool] | None = None) -> list[Opcode]:
    """`difflib.SequenceMatcher(junk, old, new, autojunk=False).get_opcodes()` over the lines between the common
    first and last lines (those are "equal" opcodes). One edit's checks align the same two texts several times:
    the result is kept for the last few pairs (a fresh list each call: callers may change it)."""
    return list(_opcodes(tuple(old), tuple(new), junk))


@lru_cache(maxsize=8)
def _opcodes(old: tuple[str, ...], new: tuple[str, ...], junk: Callable[[str], bool] | None) -> tuple[Opcode, ...]:
    n, m = len(old), len(new)
    shorter = min(n, m)
    head = 0
    while head < shorter and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < shorter - head and old[n - 1 - tail] == new[m - 1 - tail]:
        tail += 1
    ops: list[Opcode] = [("equal", 0, head, 0, head)] if head else []
    a, b = old[head:n - tail], new[head:m - tail]
    if a and b:  # neither stretch opens or closes with a line of the other's at the same end: no "equal" to join
        ops += [(tag, i1 + head, i2 + head, j1 + head, j2 + head)
                for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(junk, a, b, autojunk=False).get_opcodes()]
    elif a:
        ops.append(("delete", head, n - tail, head, head))
    elif b:
        ops.append(("insert", head, head, head, m - tail))
    if tail:
        ops.append(("equal", n - tail, n, m - tail, m))
    return tuple(ops)  # two empty texts: none, as difflib answers


def grouped_opcodes(ops: list[Opcode], context: int = 3) -> list[list[Opcode]]:
    """`SequenceMatcher.get_grouped_opcodes(context)` over opcodes from `line_opcodes`: the hunks of a unified
    diff, each change with up to `context` equal lines around it."""
    matcher = difflib.SequenceMatcher(None, "", "")
    matcher.opcodes = list(ops)  # get_grouped_opcodes reads get_opcodes(), which returns these
    return list(matcher.get_grouped_opcodes(context))
