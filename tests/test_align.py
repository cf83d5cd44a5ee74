"""The line alignment every check and the diff share (`editor.align`): a valid alignment of the two texts, the
common first and last lines matched before difflib runs, and difflib handed only the stretch between them."""

from __future__ import annotations

import difflib

import pytest
from editllm.editor.align import MARGIN, grouped_opcodes, line_opcodes
from editllm.editor.decode import DecodeStats
from editllm.editor.diff import checked_diff
from editllm.editor.edit import finish_edit
from editllm.editor.source import SourceFile
from hypothesis import given, settings
from hypothesis import strategies as st

LINES = st.lists(st.sampled_from(["a\n", "b\n", "}\n", "\n", "  x = 1\n", "c"]), max_size=12)


def blank(line: str) -> bool:
    return not line.strip()


@settings(max_examples=400, deadline=None)
@given(LINES, LINES, st.booleans())
def test_opcodes_are_an_alignment_of_the_two_texts(old: list[str], new: list[str], junk: bool) -> None:
    """Each opcode starts where the last ended, "equal" stretches are equal, and together they cover both texts:
    replaying them on `old` gives `new`. Identical texts are one "equal" (none when both are empty), as in difflib."""
    ops = line_opcodes(old, new, blank if junk else None)
    i = j = 0
    out: list[str] = []
    for tag, i1, i2, j1, j2 in ops:
        assert (i1, j1) == (i, j) and i2 >= i1 and j2 >= j1
        assert tag in ("equal", "replace", "delete", "insert")
        if tag == "equal":
            assert old[i1:i2] == new[j1:j2]
        assert (tag != "insert" or i1 == i2) and (tag != "delete" or j1 == j2)
        out += new[j1:j2]
        i, j = i2, j2
    assert (i, j) == (len(old), len(new)) and out == new
    assert all(a[0] != "equal" or b[0] != "equal" for a, b in zip(ops, ops[1:], strict=False))  # equal runs joined
    if old == new:
        assert ops == ([("equal", 0, len(old), 0, len(old))] if old else [])


def test_common_first_and_last_lines_are_matched_before_difflib(monkeypatch: pytest.MonkeyPatch) -> None:
    """difflib aligns only the lines between those both texts open and close with, and `MARGIN` of them: an
    18,000-line JSON file of repeated `},` lines took 1.5 s an alignment with difflib over the whole file."""
    seen: list[int] = []
    real = difflib.SequenceMatcher

    class Counting(real):
        def __init__(self, isjunk=None, a="", b="", autojunk=True):
            if not isinstance(a, str):  # lines, not the characters of two lines compared
                seen.append(max(len(a), len(b)))
            super().__init__(isjunk, a, b, autojunk)

    monkeypatch.setattr(difflib, "SequenceMatcher", Counting)
    records = [line for k in range(1500) for line in ("  {\n", f'    "id": {k},\n', '    "tags": []\n', "  },\n")]
    old = ["[\n", *records[:-1], "  }\n", "]\n"]
    new = old[:3003] + ['    "tags": ["new"]\n'] + old[3004:]  # record 750's tags
    assert line_opcodes(old, new) == [("equal", 0, 3003, 0, 3003), ("replace", 3003, 3004, 3003, 3004),
                                      ("equal", 3004, 6002, 3004, 6002)]
    assert seen == [2 * MARGIN + 1]
    seen.clear()
    text, edited = "".join(old), "".join(new)
    src = SourceFile("data.json", text)
    result = finish_edit(src, edited, "tag record 750 as new", DecodeStats("rewrite"), edited)
    assert result.new_text == edited
    diff = checked_diff([(src, result.new_text)])
    assert diff.count("\n+") == 2  # the `+++` line and the one changed line
    assert seen and max(seen) <= 2 * MARGIN + 1, seen  # every alignment saw the changed line and its margins


def test_grouped_opcodes_give_difflibs_hunks() -> None:
    """The diff's hunks from our opcodes are difflib's own grouping of them (context lines around each change)."""
    old = [f"{k}\n" for k in range(40)]
    new = old[:5] + ["five\n"] + old[6:30] + old[31:]
    ops = line_opcodes(old, new)
    assert ops == difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes()
    assert grouped_opcodes(ops, 3) == list(difflib.SequenceMatcher(None, old, new, autojunk=False)
                                           .get_grouped_opcodes(3))
    assert len(grouped_opcodes(ops, 3)) == 2 and len(grouped_opcodes(ops, 20)) == 1


def test_a_last_line_both_texts_end_with_matches_where_difflib_matches_it() -> None:
    """A generator (session 31): a JavaScript file cut short after its second-last function ends, as the file does,
    with `}`; matched to the file's last line, the 12 lines cut off were no longer at the end of the file, and the
    fragment was taken for the whole file (12 lines lost, exit 0). Within `MARGIN`, difflib decides."""
    old = ["a = 1\n", "function f() {\n", "  return 1\n", "}\n", "\n", "function g() {\n", "  return 2\n", "}\n"]
    new = ["a = 2\n", *old[1:4]]
    assert line_opcodes(old, new) == difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes()
    assert line_opcodes(old, new)[-1] == ("delete", 4, 8, 4, 4)  # prefix and suffix alone: the first `}` cut
