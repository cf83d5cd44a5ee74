"""Property: any fragment made of some of a file's top-level blocks, one definition edited, merges
into exactly the file with that edit, whatever the file repeats; nothing but EditError escapes."""

from __future__ import annotations

from editllm.editor.blocks import split_blocks
from editllm.editor.errors import EditError
from editllm.editor.focus import merge_focus
from editllm.editor.source import split_lines
from editllm.editor.wholefile import ensure_whole
from hypothesis import given
from hypothesis import strategies as st
from test_merge_corpus import CASES, parse

FILES = [parse(p)["before"] for p in CASES if "\ndef " in parse(p)["before"]]


@st.composite
def fragments(draw):
    text = draw(st.sampled_from(FILES))
    blocks = split_blocks(split_lines(text), 0)
    named = [k for k, b in enumerate(blocks) if b.name and [c.name for c in blocks].count(b.name) == 1]
    k = draw(st.sampled_from(named))
    keep = draw(st.lists(st.booleans(), min_size=len(blocks), max_size=len(blocks)))
    edited = blocks[k].lines + ["    edited = True\n"]
    new_blocks = [(edited if i == k else b.lines) + b.blank for i, b in enumerate(blocks)]
    expected = "".join(line for lines in new_blocks for line in lines)
    fragment = "".join(line for i, lines in enumerate(new_blocks) if i == k or keep[i] for line in lines)
    return text, fragment, expected, blocks[k].name


@given(fragments())
def test_a_fragment_of_whole_blocks_merges_into_exactly_the_edited_file(case):
    text, fragment, expected, name = case
    instruction = f"change `{name}`"
    assert ensure_whole(text, fragment, instruction).text == expected
    assert ensure_whole(text, merge_focus(text, fragment, instruction), instruction).text == expected


@given(st.sampled_from(FILES), st.data())
def test_any_cut_of_a_file_merges_or_is_refused_with_edit_error(text, data):
    """A model's output cut anywhere (a line range, re-indented or not) never crashes the merge."""
    lines = split_lines(text)
    i = data.draw(st.integers(0, len(lines) - 1))
    j = data.draw(st.integers(i + 1, len(lines)))
    cut = "".join(lines[i:j])
    try:
        ensure_whole(text, cut, "fix `f`")
        merge_focus(text, cut, "fix `f`")
    except EditError as exc:
        assert "nothing written" in str(exc) or "could not be merged" in str(exc)
