"""Line alignment of two versions of a file, for every check and the diff that compares them line by line.

difflib's `SequenceMatcher` finds the longest matching run first, and looks for it through every copy of each
line: a file of many repeated lines (`},` in JSON, blank lines, `}` in CSS) costs it the square of their count.
An 18,000-line JSON file took 1.5 s an alignment, four alignments an edit, with the output unchanged (session 31).
An edit touches a few lines: the lines both versions open and close with are equal whatever the alignment, so,
as diff tools do (git's xdiff, GNU diff), they are matched first and difflib aligns only the stretch between, with
`MARGIN` of those lines on either side, so that a line both texts end with (a closing `}`) can still match where
difflib alone would match it. Only where difflib's choice hangs on lines farther away does the result differ: another
alignment of the same edit.

Between them, difflib still visits every copy of each line: a rename spread over a 5,000-line Markdown file of blank
lines and repeated table rows took 27 s an alignment, a 2,500-line YAML file of repeated keys 11 s an edit (sessions
31-32). So difflib runs under a budget of the pairs of equal lines it visits (`BUDGET`); past it, the lines that
occur once in each text and in the same order (patience diff's anchors, as git's `--patience`) are matched first and
each stretch between two of them is aligned the same way (where no line is unique to both, the rarest lines, as
many times in each, pair up in order). Where difflib finishes within the budget, its result stands.
"""

from __future__ import annotations

import difflib
from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Sequence
from functools import lru_cache
from itertools import accumulate

Opcode = tuple[str, int, int, int, int]
MARGIN = 50  # common lines on either side of the change that difflib aligns with it
BUDGET = 1_000_000  # pairs of equal lines difflib may visit in one alignment (~0.5 s) before unique lines anchor it
MAX_DEPTH = 20  # stretches within stretches that unique lines split before difflib aligns one unbounded


def line_opcodes(old: Sequence[str], new: Sequence[str], junk: Callable[[str], bool] | None = None) -> list[Opcode]:
    """`difflib.SequenceMatcher(junk, old, new, autojunk=False).get_opcodes()` over the lines between the common
    first and last lines and `MARGIN` of those (the rest are "equal" opcodes). One edit's checks align the same two
    texts several times: the result is kept for the last few pairs (a fresh list each call: callers may change it)."""
    return list(_opcodes(tuple(old), tuple(new), junk))


@lru_cache(maxsize=8)
def _opcodes(old: tuple[str, ...], new: tuple[str, ...], junk: Callable[[str], bool] | None) -> tuple[Opcode, ...]:
    n, m = len(old), len(new)
    head, tail = _common_ends(old, new)
    if head == n == m:
        return (("equal", 0, n, 0, n),) if n else ()  # the same text (none when both are empty), as difflib answers
    # difflib still sees `MARGIN` common lines on either side of the change: the last `}` of a file cut short after
    # its second-last function matches the `}` it closes there, not the file's last line (a generator, session 31)
    head, tail = max(0, head - MARGIN), max(0, tail - MARGIN)
    ops: list[Opcode] = [("equal", 0, head, 0, head)] if head else []
    a, b = old[head:n - tail], new[head:m - tail]
    if a and b:
        ops += [(tag, i1 + head, i2 + head, j1 + head, j2 + head) for tag, i1, i2, j1, j2 in _aligned(a, b, junk)]
    elif a:
        ops.append(("delete", head, n - tail, head, head))
    elif b:
        ops.append(("insert", head, head, head, m - tail))
    if tail:
        ops.append(("equal", n - tail, n, m - tail, m))
    return tuple(_joined(ops))


def _common_ends(a: Sequence[str], b: Sequence[str]) -> tuple[int, int]:
    """How many first lines, then how many of the remaining last lines, `a` and `b` share."""
    shorter = min(len(a), len(b))
    head = 0
    while head < shorter and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < shorter - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    return head, tail


def _joined(ops: list[Opcode]) -> list[Opcode]:
    """Adjacent "equal" opcodes as one (a run split at the margin or at an anchor), as difflib gives them."""
    joined: list[Opcode] = []
    for tag, i1, i2, j1, j2 in ops:
        if joined and tag == joined[-1][0] == "equal":
            _, i1, _, j1, _ = joined.pop()
        joined.append((tag, i1, i2, j1, j2))
    return joined


class _OverBudget(Exception):
    """difflib would visit more pairs of equal lines than the budget allows."""


class _Bounded(difflib.SequenceMatcher):
    """A SequenceMatcher that counts, before each search for the longest match, the pairs of equal lines the search
    may visit (for each line of `a` in the range, its copies in `b`) and stops once they pass `budget`."""

    def __init__(self, junk: Callable[[str], bool] | None, a: Sequence[str], b: Sequence[str], budget: int) -> None:
        super().__init__(junk, a, b, autojunk=False)
        self._visits = list(accumulate((len(self.b2j.get(line, ())) for line in a), initial=0))
        self._left = budget

    def find_longest_match(self, alo: int = 0, ahi: int | None = None, blo: int = 0,
                           bhi: int | None = None) -> difflib.Match:
        ahi = len(self.a) if ahi is None else ahi
        self._left -= self._visits[ahi] - self._visits[alo]
        if self._left < 0:
            raise _OverBudget
        return super().find_longest_match(alo, ahi, blo, bhi)


def _aligned(a: Sequence[str], b: Sequence[str], junk: Callable[[str], bool] | None, depth: int = 0) -> list[Opcode]:
    """difflib's opcodes for `a` and `b` where it finishes within `BUDGET`; else those of each stretch between
    `_anchors`, aligned the same way. A stretch with no anchor (all its lines repeat) is left to difflib unbounded,
    as is one nested `MAX_DEPTH` stretches deep (each stretch's own unique lines anchor it: depth is rarely two)."""
    try:
        return _Bounded(junk, a, b, BUDGET).get_opcodes()
    except _OverBudget:
        pass
    anchors = _anchors(a, b, junk) if depth < MAX_DEPTH else []
    if not anchors:
        return difflib.SequenceMatcher(junk, a, b, autojunk=False).get_opcodes()
    ops: list[Opcode] = []
    i = j = 0
    for k, m in [*anchors, (len(a), len(b))]:
        # a stretch's common first and last lines are equal, junk or not: difflib extends a match over the blank
        head, tail = _common_ends(a[i:k], b[j:m])  # lines beside it
        ops.append(("equal", i, i + head, j, j + head))
        i, j = i + head, j + head
        if k - tail > i and m - tail > j:
            between = _aligned(a[i:k - tail], b[j:m - tail], junk, depth + 1)
            ops += [(tag, i1 + i, i2 + i, j1 + j, j2 + j) for tag, i1, i2, j1, j2 in between]
        elif k - tail > i:
            ops.append(("delete", i, k - tail, j, j))
        elif m - tail > j:
            ops.append(("insert", i, i, j, m - tail))
        ops.append(("equal", k - tail, k, m - tail, m))
        if k < len(a):
            ops.append(("equal", k, k + 1, m, m + 1))
        i, j = k + 1, m + 1
    return _joined([op for op in ops if op[1] < op[2] or op[3] < op[4]])  # difflib gives no empty opcode


def _anchors(a: Sequence[str], b: Sequence[str], junk: Callable[[str], bool] | None) -> list[tuple[int, int]]:
    """The (i, j) pairs of lines that occur once in `a` and once in `b` (and are not junk), the most of them that
    keep their order in both: patience sorting's longest increasing run of their places in `b`. Where no line is
    unique to both (a rename that changed every CSS selector, leaving `}` and the declarations), the lines that occur
    the fewest times, as often in each text, pair up in order: the k-th copy in `a` with the k-th in `b`."""
    in_a, in_b = Counter(a), Counter(b)
    fewest = min((n for line, n in in_a.items() if in_b[line] == n and not (junk and junk(line))), default=0)
    if not fewest:
        return []
    where: dict[str, list[int]] = {}
    for j, line in enumerate(b):
        if in_b[line] == fewest and in_a[line] == fewest:
            where.setdefault(line, []).append(j)
    seen: Counter[str] = Counter()
    pairs = []
    for i, line in enumerate(a):
        if line in where and not (junk and junk(line)):
            pairs.append((i, where[line][seen[line]]))
            seen[line] += 1
    tops: list[int] = []  # the smallest last place in `b` of an increasing run of each length
    ends: list[int] = []  # the index in `pairs` of that run's last pair
    before: list[int] = []  # each pair's predecessor in its run
    for n, (_, j) in enumerate(pairs):
        k = bisect_left(tops, j)
        before.append(ends[k - 1] if k else -1)
        if k == len(tops):
            tops.append(j)
            ends.append(n)
        else:
            tops[k], ends[k] = j, n
    run: list[tuple[int, int]] = []
    n = ends[-1] if ends else -1
    while n >= 0:
        run.append(pairs[n])
        n = before[n]
    return run[::-1]


def grouped_opcodes(ops: list[Opcode], context: int = 3) -> list[list[Opcode]]:
    """`SequenceMatcher.get_grouped_opcodes(context)` over opcodes from `line_opcodes`: the hunks of a unified
    diff, each change with up to `context` equal lines around it."""
    matcher = difflib.SequenceMatcher(None, "", "")
    matcher.opcodes = list(ops)  # get_grouped_opcodes reads get_opcodes(), which returns these
    return list(matcher.get_grouped_opcodes(context))
