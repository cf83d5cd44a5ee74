"""editor/renames.py: a rename the edit did only in part is pointed out on stderr; the edit stands."""

from __future__ import annotations

import pytest
from editllm.editor.renames import left_unrenamed, renames
from test_file_conventions import run

C = ("#include \"ringbuf.h\"\n\n/* rb_count is the number of bytes stored. */\nsize_t rb_count(const ringbuf_t *rb)\n"
     "{\n    return rb->len;\n}\n\nvoid rb_drain(ringbuf_t *rb)\n{\n    while (rb_count(rb) > 0)\n"
     "        rb_pop(rb);\n}\n")
ASK = "Rename the function rb_count to rb_size everywhere, including its call sites."


def test_the_renames_an_instruction_asks_for():
    assert renames(ASK) == [("rb_count", "rb_size")]
    assert renames("rename parse() to parse_args()") == [("parse", "parse_args")]
    assert renames("Rename `foo` as `bar`, and rename x -> y") == [("foo", "bar"), ("x", "y")]
    assert renames("Rename the method to something clearer") == []  # no old name given
    assert renames("add a parameter to parse") == []


def test_a_call_site_left_with_the_old_name_is_found_and_comments_are_not():
    """A real probe (session 27): the declaration and the definition were renamed, a call in rb_drain was not, so
    the code no longer linked; exit 0 with nothing said."""
    half = C.replace("size_t rb_count(", "size_t rb_size(")
    assert left_unrenamed(C, half, ASK) == [("rb_count", "rb_size", [11])]  # not the comment on line 3
    assert left_unrenamed(C, C.replace("rb_count(", "rb_size("), ASK) == []  # done everywhere
    assert left_unrenamed(C, C, ASK) == []  # no edit: nothing to say


def test_only_uses_of_the_kind_the_edit_renamed_count():
    """Renaming the function `parse` renames bare uses: `ast.parse` is another object's attribute."""
    old = "import ast\n\n\ndef parse(s):\n    return ast.parse(s)\n\n\nprint(parse('x'))\n"
    new = old.replace("def parse(", "def parse_args(").replace("print(parse(", "print(parse_args(")
    assert left_unrenamed(old, new, "rename parse() to parse_args()") == []
    method = "class P:\n    def run(self):\n        return 1\n\n\nP().run()\nP().run()\n"
    half = method.replace("P().run()\nP().run()", "P().start()\nP().run()").replace("def run(", "def start(")
    assert left_unrenamed(method, half, "rename the method run to start") == [("run", "start", [7])]


@pytest.fixture
def model(monkeypatch, scripted_lm) -> dict:
    box: dict = {"text": ""}
    monkeypatch.setattr("editllm.editor.models.load_model", lambda *a, **k: scripted_lm(box["text"]))
    return box


def test_the_cli_notes_a_half_done_rename_and_still_writes_the_diff(tmp_path, model):
    (tmp_path / "ringbuf.c").write_text(C)
    model["text"] = C.replace("size_t rb_count(", "size_t rb_size(") + "```\n"
    res = run(tmp_path, "fix", "ringbuf.c", ASK)
    assert res.exit_code == 0 and "+size_t rb_size(const ringbuf_t *rb)" in res.stdout
    assert "ringbuf.c: note: the instruction renames rb_count to rb_size, but the edit still uses rb_count on " \
        "line 11\n" in res.stderr
    model["text"] = C.replace("rb_count(", "rb_size(") + "```\n"
    res = run(tmp_path, "fix", "ringbuf.c", ASK)
    assert res.exit_code == 0 and "still uses" not in res.stderr
