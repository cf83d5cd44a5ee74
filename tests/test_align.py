"""The line alignment every check and the diff share (`editor.align`): a valid alignment of the two texts, the
common first and last lines matched before difflib runs, and difflib handed only the stretch between them."""

from __future__ import annotations

import difflib

import pytest
from editllm.editor import align
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
@given(LINES, LINES, st.booleans(), st.sampled_from([align.BUDGET, 0, 3]))
def test_opcodes_are_an_alignment_of_the_two_texts(old: list[str], new: list[str], junk: bool, budget: int) -> None:
    """Each opcode starts where the last ended, "equal" stretches are equal, and together they cover both texts:
    replaying them on `old` gives `new`. Identical texts are one "equal" (none when both are empty), as in difflib.
    So also where difflib's budget is spent at once and unique lines anchor the alignment (`budget` 0 or 3)."""
    was = align.BUDGET
    align.BUDGET = budget
    try:
        align._opcodes.cache_clear()
        ops = line_opcodes(old, new, blank if junk else None)
    finally:
        align.BUDGET = was
        align._opcodes.cache_clear()
    i = j = 0
    out: list[str] = []
    for tag, i1, i2, j1, j2 in ops:
        assert (i1, j1) == (i, j) and i2 >= i1 and j2 >= j1 and (i2 > i1 or j2 > j1)  # none empty, as difflib's
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
    real = difflib.SequenceMatcher.__init__

    def counting(self, isjunk=None, a="", b="", autojunk=True):  # difflib's own and the budgeted subclass's
        if not isinstance(a, str):  # lines, not the characters of two lines compared
            seen.append(max(len(a), len(b)))
        real(self, isjunk, a, b, autojunk)

    monkeypatch.setattr(difflib.SequenceMatcher, "__init__", counting)
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


def records(n: int, renamed: bool = False) -> list[str]:
    """A YAML file of `n` records whose lines repeat but for a key and a value, `name` renamed in every record."""
    key = "title" if renamed else "name"
    return [line for k in range(n) for line in (f"key{k}:\n", f"  {key}: n{k}\n", f"  value: {k}\n", "  list:\n",
                                                 "    - a\n", "\n")]


@pytest.mark.parametrize("junk", [None, blank])
def test_past_difflibs_budget_unique_lines_anchor_an_alignment_as_good(monkeypatch: pytest.MonkeyPatch, junk) -> None:
    """Sessions 31-32: a rename in every record of a 2,500-line YAML file took 11 s of checks, a 5,000-line Markdown
    file's 27 s an alignment: difflib visits every copy of each repeated line. Past its budget, the lines each text
    holds once anchor the alignment; here it keeps as many lines equal as difflib does, and difflib's own search is
    never run over the whole file (only over the stretches between anchors)."""
    old, new = records(300), records(300, renamed=True)
    reference = difflib.SequenceMatcher(junk, old, new, autojunk=False).get_opcodes()
    searched: list[int] = []
    real = align._Bounded.find_longest_match

    def counting(self, alo=0, ahi=None, blo=0, bhi=None):
        found = real(self, alo, ahi, blo, bhi)  # refused, over the budget, before it searches
        searched.append(ahi - alo)
        return found

    monkeypatch.setattr(align._Bounded, "find_longest_match", counting)
    monkeypatch.setattr(align, "BUDGET", 5_000)  # the 300 records' repeated lines alone visit 4 x 300^2 pairs
    align._opcodes.cache_clear()
    ops = line_opcodes(old, new, junk)
    align._opcodes.cache_clear()

    def equal(opcodes) -> int:
        return sum(i2 - i1 for tag, i1, i2, _, _ in opcodes if tag == "equal")

    assert equal(ops) == equal(reference) == 5 * 300
    assert [op[0] for op in ops].count("replace") == 300  # one line each record: `name` made `title`
    assert max(searched) < 10  # difflib searched only between anchors (every `keyN:` and `value: N` line)


def test_with_no_line_unique_to_both_the_rarest_lines_pair_up_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    """A rename that changes every CSS selector leaves no line unique to both texts, only `}` and declarations that
    repeat (`swagger.css`: 2.8 s an alignment, then 0.8 s): the lines as rare in each text pair up in order (the k-th
    `@media` line with the k-th), and difflib aligns only the small stretches between. As many lines stay equal as
    with difflib over the whole."""
    def sheet(prefix: str) -> list[str]:
        rules = [line for k in range(120) for line in (f".{prefix} .c{k} {{\n", f"  margin: {k % 4}px;\n", "}\n")]
        return [line for k in range(0, len(rules), 90) for line in ("@media print {\n", *rules[k:k + 90], "}\n")]

    old, new = sheet("swagger-ui"), sheet("api-ui")
    reference = difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes()
    aligned: list[int] = []
    real = difflib.SequenceMatcher.get_matching_blocks

    def counting(self):
        blocks = real(self)  # a budgeted search past its budget raises before this records it
        aligned.append(len(self.a))
        return blocks

    monkeypatch.setattr(difflib.SequenceMatcher, "get_matching_blocks", counting)
    monkeypatch.setattr(align, "BUDGET", 500)
    align._opcodes.cache_clear()
    ops = line_opcodes(old, new)
    align._opcodes.cache_clear()
    assert sum(i2 - i1 for tag, i1, i2, _, _ in ops if tag == "equal") == sum(
        i2 - i1 for tag, i1, i2, _, _ in reference if tag == "equal") == 2 * 120 + 2 * 4
    assert aligned and max(aligned) < 20, aligned
