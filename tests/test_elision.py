"""A placeholder the model writes for code it left out (`# ... existing code ...`) never reaches the user's file
(`editor.elision`): the original's lines take its place, or the edit is refused when where they go is unclear."""

from __future__ import annotations

import pytest
from editllm.editor.elision import fill, trigger
from editllm.editor.errors import EditError
from test_file_conventions import run
from test_file_conventions import tools_apply as apply_diff
from test_input_safety import one_line_error as refused

MODULE = "import os\n\n\ndef parse(t):\n    return t.split()\n\n\ndef helper(x):\n    return x + 1\n\n\n" \
         "def main():\n    return parse('a b')\n"
ASK = "make parse lowercase its input"
GOAL = MODULE.replace("return t.split()", "return t.lower().split()")
PARSED = "def parse(t):\n    return t.lower().split()\n"


@pytest.fixture
def model(monkeypatch, scripted_lm) -> dict:
    box: dict = {"text": ""}
    monkeypatch.setattr("editllm.editor.models.load_model", lambda *a, **k: scripted_lm(box["text"]))
    return box


@pytest.mark.parametrize("line", [
    "# ... rest of the file unchanged ...", "# ... existing code ...", "    ...  # unchanged",
    "    # ... unchanged ...", "// ... existing code ...", "{/* ... */}", "/* rest of the class unchanged */",
    "[... rest of document unchanged ...]",
    "# ...", "<!-- ... -->", "    pass  # same as before", "// Rest of the code remains the same", "# ... (2 more) ...",
])
def test_placeholders_are_recognised(line):
    assert trigger(line) is not None


@pytest.mark.parametrize("line", [
    "# keep the existing code path for py2 because of a bug in the parser on windows", "x = 1  # unchanged",
    "return rest", "def foo(): ...", "# TODO: handle other cases", "print('...')", "# Process the rest of the items",
    "# value stays unchanged when empty", "# NOTE: the rest of this is legacy", "",
    "from ...utils import auto_docstring, logging", "x = f(...)",
])
def test_ordinary_lines_and_comments_are_not_placeholders(line):
    assert trigger(line) is None


@pytest.mark.parametrize("output", [
    f"import os\n\n\n{PARSED}\n\n# ... rest of the file unchanged ...\n",  # for the definitions after
    f"# ... existing code ...\n\n\n{PARSED}\n\n# ... existing code ...\n",  # for the lines before and after
    f"import os\n\n\n{PARSED}# ... rest of the file unchanged ...\n",  # no blank line: right after a changed line
    GOAL.replace("    return x + 1", "    ...  # unchanged"),  # for another function's body
    GOAL.replace("    return x + 1", "    # ... unchanged ...\n    pass"),
    GOAL.replace("    return x + 1", "    ..."),  # a bare `...` alone in place of a body
])
@pytest.mark.parametrize("mode", ["rewrite", "spec"])
def test_the_original_takes_a_placeholders_place(tmp_path, model, output, mode):
    (tmp_path / "m.py").write_text(MODULE)
    model["text"] = output + "```\n"
    res = run(tmp_path, "fix", "m.py", ASK, "--no-focus", "--mode", mode)
    assert res.exit_code == 0, res.stderr
    assert "unchanged" not in res.stdout and "existing" not in res.stdout and "merged it into place" in res.stderr
    apply_diff(tmp_path, res.stdout.encode())
    assert (tmp_path / "m.py").read_text() == GOAL


def test_a_focused_edit_with_a_placeholder_after_it_leaves_no_stray_comment(tmp_path, model):
    (tmp_path / "m.py").write_text(MODULE)
    model["text"] = f"{PARSED}\n\n# ... rest of the file unchanged ...\n```\n"
    res = run(tmp_path, "fix", "m.py", ASK, "--apply")
    assert res.exit_code == 0, res.stderr
    assert (tmp_path / "m.py").read_text() == GOAL


def test_a_placeholder_between_changed_lines_is_refused(tmp_path, model):
    old = "def f(t):\n    a = t + 1\n    b = a * 2\n    c = b - 3\n    return c\n"
    (tmp_path / "m.py").write_text(old)
    model["text"] = "def f(t):\n    a = t + 10\n    # ... existing code ...\n    return c * 2\n```\n"
    refused(run(tmp_path, "fix", "m.py", "change f", "--apply"), "placeholder ('# ... existing code ...')")
    assert (tmp_path / "m.py").read_text() == old


def test_in_copy_mode_a_gen_spans_placeholder_is_filled_too(tmp_path, model):
    (tmp_path / "m.py").write_text(MODULE)
    model["text"] = f"<gen>import os\n\n\n{PARSED}\n\n# ... rest of the file unchanged ...</gen>"
    res = run(tmp_path, "fix", "m.py", ASK, "--mode", "copy", "--no-focus", "--apply")
    assert res.exit_code == 0 and "fall" not in res.stderr, res.stderr
    assert (tmp_path / "m.py").read_text() == GOAL


def test_javascript_and_markdown_placeholders(tmp_path, model):
    js = "function a() {\n  return 1;\n}\n\nfunction b() {\n  return 2;\n}\n"
    (tmp_path / "m.js").write_text(js)
    model["text"] = "function a() {\n  return 10;\n}\n\n// ... existing code ...\n```\n"
    res = run(tmp_path, "fix", "m.js", "make a return 10", "--apply")
    assert res.exit_code == 0, res.stderr
    assert (tmp_path / "m.js").read_text() == js.replace("return 1;", "return 10;")
    md = "# Title\n\nFirst paragraph, with a tpyo.\n\nSecond paragraph.\n\nThird paragraph.\n"
    (tmp_path / "m.md").write_text(md)
    model["text"] = "# Title\n\nFirst paragraph, with a typo.\n\n[... rest of the document unchanged ...]\n````\n"
    res = run(tmp_path, "fix", "m.md", "fix the typo in the first paragraph", "--apply")
    assert res.exit_code == 0, res.stderr
    assert (tmp_path / "m.md").read_text() == md.replace("tpyo", "typo")


def test_lines_the_file_had_and_asked_for_placeholders_are_kept():
    old = "def f():\n    # ... existing code ...\n    return 1\n"
    new = "def f():\n    # ... existing code ...\n    return 2\n"
    assert fill(old, new, "return 2", "m.py") == (new, False)  # the user's own comment
    stub = "def f():\n    ...  # unchanged\n"
    assert fill("def f():\n    return 1\n", stub, "replace f's body with a stub", "m.py") == (stub, False)
    proto = "class P(Protocol):\n    def m(self) -> int:\n        ...\n"
    assert fill("class P(Protocol):\n    pass\n", proto, "add an m method returning int to P", "m.py") == (
        proto, False)  # a new method's bare `...` is code


def test_a_new_function_with_a_bare_ellipsis_body_is_code():
    old = "def f():\n    return 1\n"
    new = old + "\n\ndef g():\n    ...\n"
    assert fill(old, new, "add a function g", "m.py") == (new, False)


def test_an_abstract_method_made_from_a_body_keeps_its_ellipsis():
    old = "class A:\n    def m(self):\n        return 1\n"
    new = "class A:\n    @abstractmethod\n    def m(self):\n        ...\n"
    assert fill(old, new, "make A.m abstract", "m.py") == (new, False)


def test_a_placeholder_whose_lines_cannot_be_told_is_refused():
    old = "def f():\n    alpha = 1\n    beta = 2\n"
    with pytest.raises(EditError, match="which lines it stands for is unclear"):
        fill(old, "def f():\n    # ... existing code ...\n    zzzzzzzz()\n", "call zzzzzzzz", "m.py")
