"""A comment the model re-wrapped and nobody asked it to is put back; everything else stays as it wrote it."""

from __future__ import annotations

import pytest
from editllm.editor.reflow import commentary, keep_end_blanks, keep_layout

ZPIPE = ["/* Compress from file source to file dest until EOF on source.\n",
         "   def() returns Z_OK on success, Z_MEM_ERROR if memory could not be\n",
         "   allocated for processing. */\n", "#define CHUNK 16384\n", "int def(FILE *source, FILE *dest)\n", "{\n",
         "    return 0;   \n", "}\n"]
REWRAPPED = ["/* Compress from file source to file dest until EOF on\n",
             "   source. def() returns Z_OK on success, Z_MEM_ERROR if memory could not\n",
             "   be allocated for processing. */\n"]


def test_a_rewrapped_comment_alone_is_no_change():
    assert keep_layout("zpipe.c", ZPIPE, REWRAPPED + ZPIPE[3:], "make sure CHUNK is 16384") == ZPIPE


def test_a_rewrapped_comment_next_to_the_real_change_is_put_back_and_the_change_kept():
    new = REWRAPPED + ["#define CHUNK 32768\n"] + ZPIPE[4:6] + ["    return 0;\n", "}\n"]
    expected = ZPIPE[:3] + ["#define CHUNK 32768\n"] + ZPIPE[4:6] + ["    return 0;\n", "}\n"]  # code as written
    assert keep_layout("zpipe.c", ZPIPE, new, "change CHUNK to 32768") == expected


@pytest.mark.parametrize(("new", "instruction"), [
    (REWRAPPED + ZPIPE[3:], "reflow the comment above def to 72 columns"),  # asked for
    (ZPIPE[:1] + ["   def() returns Z_OK on success or Z_MEM_ERROR if memory could not be\n"] + ZPIPE[2:], "reword it"),
    (ZPIPE[:6] + ["        return 0;   \n", "}\n"], "indent the return"),  # code's own whitespace
    (ZPIPE[:6] + ["      return 0;   \n", "}\n"], "fix def"),
])
def test_asked_layout_new_words_and_code_whitespace_stay(new, instruction):
    assert keep_layout("zpipe.c", ZPIPE, new, instruction) == new


def test_a_rewrapped_python_docstring_and_markdown_paragraph_are_put_back():
    old = ['def f():\n', '    """Return one, the\n', '    number."""\n', '    return 1\n']
    assert keep_layout("a.py", old, ['def f():\n', '    """Return one, the number."""\n', '    return 1\n'],
                       "add type hints") == old
    md = ["# T\n", "\n", "Some words that run\n", "on and on.\n", "\n", "```\n", "code  here\n", "```\n"]
    assert keep_layout("README.md", md, md[:2] + ["Some words that run on and on.\n"] + md[4:], "fix the typo") == md
    code = md[:6] + ["code here\n"] + md[7:]  # inside a fenced block the spacing is the text's own
    assert keep_layout("README.md", md, code, "fix the typo") == code


def test_comment_lines_are_told_from_code_strings_and_literals():
    lines = ['x = "/* not a comment */";\n', "// a comment\n", "int y; /* trailing */\n", "/* one\n", "   two */\n",
             "char c = '/';\n"]
    assert commentary("a.c", lines) == {3, 4}  # `//` markers are words: a `//` comment is never put back


@pytest.mark.parametrize(("path", "old", "new", "instruction"), [
    # re-indented code with its docstring: the docstring's indentation is the code's
    ("a.py", ['def f():\n', '    """Doc."""\n', '\n', '    return 1\n'],
     ['if DEBUG:\n', '    def f():\n', '        """Doc."""\n', '\n', '        return 1\n'],
     "only define f when DEBUG is set"),
    # a string that is no docstring, and a doctest's expected output
    ("a.py", ['EXPECTED = [\n', '    "name   size",\n', ']\n'], ['EXPECTED = [\n', '    "name  size",\n', ']\n'],
     "fix the expected header"),
    ("a.py", ['def f():\n', '    """Join.\n', '\n', '    >>> f()\n', '    a  b\n', '    """\n'],
     ['def f():\n', '    """Join.\n', '\n', '    >>> f()\n', '    a b\n', '    """\n'], "fix the doctest"),
    # a comment's kind changed with its words kept, a heading joined, a paragraph split, a regex literal
    ("a.c", ["// one two\n", "int x;\n"], ["/* one two */\n", "int x;\n"], "use a block comment"),
    ("README.md", ["# Install\n", "with pip\n"], ["# Install with pip\n"], "make it one heading"),
    ("README.md", ["First. Second.\n"], ["First.\n", "\n", "Second.\n"], "give Second its own paragraph"),
    ("README.md", ["Hello  world.\n"], ["Hello world.\n"], "fix the typo in the greeting"),  # spaces, not breaks
    ("a.js", ["s = s.replace(/\\/*$/, '');\n", "x = 'a  b';\n"],
     ["s = s.replace(/\\/*$/, '');\n", "x = 'a b';\n"], "fix the message"),
])
def test_code_strings_indentation_and_structure_stay_as_the_model_wrote_them(path, old, new, instruction):
    assert keep_layout(path, old, new, instruction) == new


def test_a_plain_text_paragraph_rewrapped_is_put_back_and_a_line_is_no_layout_word():
    """A real probe: `check LICENSE "the file must contain at least one Copyright line"` on a file that does
    exited 1 with the MIT text re-wrapped: plain text had no paragraphs put back, and "line" counted as layout."""
    from editllm.editor.source import split_lines

    old = split_lines("Copyright (c) 2015 A.\n\nPermission is hereby granted, free of charge, to any\n"
                      "person obtaining a copy of this software.\n")
    new = split_lines("Copyright (c) 2015 A.\n\nPermission is hereby granted, free of charge,\n"
                      "to any person obtaining a copy of this software.\n")
    assert keep_layout("LICENSE", old, new, "the file must contain at least one Copyright line") == old
    assert keep_layout("notes.txt", old, new, "fix typos") == old
    assert keep_layout("LICENSE", old, new, "keep lines under 60 characters") == new  # asked for
    assert keep_layout("LICENSE", old, new, "make each sentence one line") == new
    for rule in ("Lines must not exceed 80", "Keep lines under 100", "Every line at most 88"):  # a review's
        assert keep_layout("LICENSE", old, new, rule) == new


def test_cosmetic_only_proposals_are_told_apart_from_the_rules_edits():
    """`check`'s bar (a real probe: exit 1 on files that met their rules, for a comment reworded, a docstring's
    quotes tripled, a LICENSE re-wrapped)."""
    from editllm.editor.reflow import cosmetic_only

    old = 'import os\n\n\ndef f():\n    "Doc."\n    # Print reports on self and on subdirs\n    return os.sep\n'
    rule = "the code must not use Python 2 print statements"
    assert cosmetic_only("m.py", old, old.replace("and on subdirs", "and subdirs"), rule)
    assert not cosmetic_only("m.py", old, old.replace('"Doc."', '"""Doc."""'), "docstrings need a summary")  # code
    for rule, fixed in (("library modules must not have a shebang", "#!/usr/bin/env python\n" + old),
                        ("no noqa markers", old.replace("on subdirs", "on subdirs  # noqa")),
                        ("lines must not exceed 30", old.replace("self and on subdirs", "self and on\n    # subdirs"))):
        assert not cosmetic_only("m.py", fixed, old, rule)  # a review's: real fixes of rules that name no comment
    assert not cosmetic_only("m.py", old, "# Copyright 2026 ACME\n" + old, "files must carry a licence header")
    assert not cosmetic_only("m.py", old, old.replace("os.sep", "os.pathsep"), rule)  # code changed
    assert not cosmetic_only("m.py", old, old.replace("and on subdirs", "and subdirs"), "fix the comments")
    text = "Permission is hereby granted, free of charge, to any\nperson obtaining a copy.\n"
    wrapped = "Permission is hereby granted, free of charge,\nto any person obtaining a copy.\n"
    assert cosmetic_only("LICENSE", text, wrapped, "the file must contain a Copyright line")
    assert not cosmetic_only("LICENSE", text, wrapped.replace("any", "every"), "the file must contain a Copyright line")
    assert not cosmetic_only("main.c", text, wrapped, "the file must contain a Copyright line")  # not judged


def test_the_blank_lines_a_file_ends_with_are_kept_unless_asked_away():
    """Right before the closing fence the model drops a file's last blank line (a real probe, session 32: a README
    asked for one more list item also lost its final blank line, a hunk in the diff nobody asked for)."""
    old = ["# Tools\n", "\n", "* pstree\n", "\n"]
    new = ["# Tools\n", "\n", "* pstree\n", "* pidof\n"]
    assert keep_end_blanks(old, new, "add pidof to the list") == new + ["\n"]
    assert keep_end_blanks(old, new, "remove the trailing blank lines") is new
    assert keep_end_blanks(old, new + ["\n"], "add pidof to the list") == new + ["\n"]
    assert keep_end_blanks(old + ["  \n"], ["# Tools\n", "\n", "* pidof"], "add pidof") == \
        ["# Tools\n", "\n", "* pidof\n", "\n", "  \n"]
    assert keep_end_blanks(["x = 1\n"], ["x = 2\n"], "set x to 2") == ["x = 2\n"]


def test_the_blank_lines_that_set_apart_a_last_definition_removed_go_with_it():
    """A probe (session 37): "remove the parse_sku function", the file's last, left the two blank lines above it at
    the file's end. Blank lines the output gains at its end go, unless the instruction may ask for them."""
    old = ["def a():\n", "    return 1\n", "\n", "\n", "def b():\n", "    return 2\n"]
    gone = ["def a():\n", "    return 1\n", "\n", "\n"]
    assert keep_end_blanks(old, gone, "remove the b function") == gone[:2]
    assert keep_end_blanks(old, gone, "add a trailing blank line") is gone
    assert keep_end_blanks(old + ["\n"], gone, "remove the b function") == gone[:3]


def test_blank_lines_the_output_only_drops_were_the_edit():
    """A review (session 32): when dropping the final blank lines is all the output changes, that was the edit
    ("delete the last two lines", "fix the W391 warning"), whatever words the instruction uses."""
    assert keep_end_blanks(["x = 1\n", "\n", "\n"], ["x = 1\n"], "delete the last two lines") == ["x = 1\n"]
    assert keep_end_blanks(["x = 1\n", "\n"], ["x = 2\n"], "set x to 2") == ["x = 2\n", "\n"]


def test_allow_deletions_takes_the_output_as_it_is_at_the_end_too():
    from editllm.editor.decode import DecodeStats
    from editllm.editor.edit import finish_edit
    from editllm.editor.source import SourceFile

    old, new = "# T\n\nPara one is here.\n\nPara two goes away.\n\n", "# T\n\nPara one is here.\n"
    result = finish_edit(SourceFile("x.md", old), new, "delete the last paragraph", DecodeStats("rewrite"), new, True)
    assert result.new_text == new


def test_the_blank_lines_a_file_starts_with_are_kept_unless_asked_away():
    """A real-model probe (session 33): PyYAML's error.py opens with a blank line, which the model left out in 2 of
    2 edits about its classes, an unasked hunk in each diff. Put back as the final ones are, on the same terms."""
    old = ["\n", "__all__ = ['Mark']\n", "\n", "class Mark:\n", "    pass\n"]
    new = ["__all__ = ['SourceMark']\n", "\n", "class SourceMark:\n", "    pass\n"]
    assert keep_end_blanks(old, new, "Rename the Mark class to SourceMark") == ["\n"] + new
    assert keep_end_blanks(["\n", "\n"] + old, new, "rename Mark") == ["\n", "\n", "\n"] + new  # old's own lines
    assert keep_end_blanks(old, new, "rename Mark, and drop the leading blank line") is new
    assert keep_end_blanks(old, new, "rename Mark, then format with black") is new
    assert keep_end_blanks(old, old[1:], "delete the first line") == old[1:]  # dropping it was all the edit
    assert keep_end_blanks(old + ["\n"], new, "rename Mark") == ["\n"] + new + ["\n"]  # both ends at once
    assert keep_end_blanks(old, ["\n"], "remove everything") == ["\n"]  # an emptied file is not given lines back
    shebang = ["#!/usr/bin/env python3\n", "\n"] + new
    assert keep_end_blanks(old, shebang, "rename Mark and add a shebang line") is shebang  # it must stay first


def test_a_code_edit_keeps_the_blank_line_the_file_opens_with(scripted_lm):
    """End to end: the model's output without the file's first, blank line gives a diff without that hunk."""
    from editllm.editor.edit import EditOptions, edit_file
    from editllm.editor.source import SourceFile

    before = "\n__all__ = ['Mark']\n\n\nclass Mark:\n    pass\n"
    wrote = before.lstrip("\n").replace("Mark", "SourceMark")
    result = edit_file(scripted_lm(wrote + "```\n"), SourceFile("error.py", before),
                       "Rename the Mark class to SourceMark.", EditOptions())
    assert result.new_text == "\n" + wrote
