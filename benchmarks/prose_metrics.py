"""Quality of a prose edit: recall, precision and exact match, from (before, after, produced).

Plain functions on LF text, so the bench runner (or anyone) can score an edit without importing it.
A case lists the lines it asks to change (`edits`: 1-based line number in `before`, the line before,
the line after). The produced text is aligned with `before` line by line; a modified line counts
once, not as a removal plus an addition (inside a replaced block, similar old and new lines are
paired as modifications; the rest count as pure removals or additions).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass


@dataclass(frozen=True)
class Change:
    """One changed line: `old` is its 1-based number in `before` (None for an added line), `new` its
    text in the produced file (None for a removed line)."""

    old: int | None
    new: str | None


def _lines(text: str) -> list[str]:
    return text.split("\n")[:-1] if text.endswith("\n") else text.split("\n")


def changes(before: str, produced: str) -> list[Change]:
    """Every changed line of `produced` against `before`, a modified line counted once."""
    a, b = _lines(before), _lines(produced)
    out: list[Change] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag != "equal":
            out += _pair(a, b, i1, i2, j1, j2)
    return sorted(out, key=lambda c: (c.old is None, c.old or 0))


def _pair(a: list[str], b: list[str], i1: int, i2: int, j1: int, j2: int) -> list[Change]:
    """Pair the removed lines a[i1:i2] with the added b[j1:j2] as difflib's ndiff does: the most
    similar pair (ratio ≥ 0.5) is a modified line, then the same on either side of it; where nothing is
    alike, lines pair in order (a rewritten line is still one changed line)."""
    best, where = 0.5, None
    for i in range(i1, i2):
        for j in range(j1, j2):
            ratio = difflib.SequenceMatcher(None, a[i], b[j], autojunk=False).ratio()
            if ratio > best or (where is None and ratio >= best):
                best, where = ratio, (i, j)
    if where is None:  # nothing alike: pair in order, the surplus is removed or added
        n = min(i2 - i1, j2 - j1)
        return ([Change(i1 + k + 1, b[j1 + k]) for k in range(n)] + [Change(i + 1, None) for i in range(i1 + n, i2)]
                + [Change(None, b[j]) for j in range(j1 + n, j2)])
    i, j = where
    return _pair(a, b, i1, i, j1, j) + [Change(i + 1, b[j])] + _pair(a, b, i + 1, i2, j + 1, j2)


def _edit_lines(edits: list[dict]) -> dict[int, str]:
    return {int(e["line"]): e["after"] for e in edits}


def recall(before: str, produced: str, edits: list[dict]) -> float:
    """Share of the requested edits made: the asked line now reads exactly as asked (1.0 for none asked)."""
    if not edits:
        return 1.0
    made = {c.old for c in changes(before, produced) if c.old is not None and c.new is not None
            and _edit_lines(edits).get(c.old) == c.new}
    return sum(int(e["line"]) in made for e in edits) / len(edits)


def precision(before: str, produced: str, edits: list[dict]) -> float:
    """Changed lines that were asked for ÷ all changed lines (1.0 when nothing changed: no line was
    changed that was not asked for). A change to an asked line counts as asked even when its new text
    is wrong; recall is what sees that."""
    found = changes(before, produced)
    if not found:
        return 1.0
    asked = _edit_lines(edits)
    return sum(c.old in asked and c.new is not None for c in found) / len(found)


def unrequested(before: str, produced: str, edits: list[dict]) -> int:
    """How many changed lines nobody asked for (added and removed lines included)."""
    asked = _edit_lines(edits)
    return sum(not (c.old in asked and c.new is not None) for c in changes(before, produced))


def exact_match(after: str, produced: str) -> bool:
    """Byte for byte the gold text."""
    return produced == after


def score(before: str, after: str, produced: str, edits: list[dict]) -> dict:
    """All of the above for one case, as the bench would record it."""
    return {"recall": recall(before, produced, edits), "precision": precision(before, produced, edits),
            "unrequested_lines": unrequested(before, produced, edits), "exact_match": exact_match(after, produced)}
