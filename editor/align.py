"""Line alignment of two versions of a file, for every check and the diff that compares them line by line.

difflib's `SequenceMatcher` finds the longest matching run first, and looks for it through every copy of each
line: a file of many repeated lines (`},` in JSON, blank lines, `}` in CSS) costs it the square of their count.
An 18,000-line JSON file took 1.5 s an alignment, four alignments an edit, with the output unchanged (session 31).
An edit touches a few lines: the lines both versions open and close with are equal whatever the alignment, so,
as diff tools do (git's xdiff, GNU diff), they are matched first and difflib aligns only the stretch between, with
`MARGIN` of those lines on either side, so that a line both texts end with (a closing `}`) can still match where
difflib alone would match it. Only where difflib's choice hangs on lines farther away does the result differ: another
alignment of the same edit.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence
from functools import lru_cache

Opcode = tuple[str, int, int, int, int]
MARGIN = 50  # common lines on either side of the change that difflib aligns with it


def line_opcodes(old: Sequence[str], new: Sequence[str], junk: Callable[[str], bool] | None = None) -> list[Opcode]:
    """`difflib.SequenceMatcher(junk, old, new, autojunk=False).get_opcodes()` over the lines between the common
    first and last lines and `MARGIN` of those (the rest are "equal" opcodes). One edit's checks align the same two
    texts several times: the result is kept for the last few pairs (a fresh list each call: callers may change it)."""
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
    if head == n == m:
        return (("equal", 0, n, 0, n),) if n else ()  # the same text (none when both are empty), as difflib answers
    # difflib still sees `MARGIN` common lines on either side of the change: the last `}` of a file cut short after
    # its second-last function matches the `}` it closes there, not the file's last line (a generator, session 31)
    head, tail = max(0, head - MARGIN), max(0, tail - MARGIN)
    ops: list[Opcode] = [("equal", 0, head, 0, head)] if head else []
    a, b = old[head:n - tail], new[head:m - tail]
    if a and b:
        ops += [(tag, i1 + head, i2 + head, j1 + head, j2 + head)
                for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(junk, a, b, autojunk=False).get_opcodes()]
    elif a:
        ops.append(("delete", head, n - tail, head, head))
    elif b:
        ops.append(("insert", head, head, head, m - tail))
    if tail:
        ops.append(("equal", n - tail, n, m - tail, m))
    joined: list[Opcode] = []
    for tag, i1, i2, j1, j2 in ops:  # an "equal" run split at the margin is one
        if joined and tag == joined[-1][0] == "equal":
            _, i1, _, j1, _ = joined.pop()
        joined.append((tag, i1, i2, j1, j2))
    return tuple(joined)


def grouped_opcodes(ops: list[Opcode], context: int = 3) -> list[list[Opcode]]:
    """`SequenceMatcher.get_grouped_opcodes(context)` over opcodes from `line_opcodes`: the hunks of a unified
    diff, each change with up to `context` equal lines around it."""
    matcher = difflib.SequenceMatcher(None, "", "")
    matcher.opcodes = list(ops)  # get_grouped_opcodes reads get_opcodes(), which returns these
    return list(matcher.get_grouped_opcodes(context))
