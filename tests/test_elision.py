"""A placeholder the model writes for code it left out (`# ... existing code ...`) never reaches the user's file
(`editor.elision`): the original's lines take its place, or the edit is refused when where they go is unclear."""

from __future__ import annotations

import pytest
from editllm.editor.elision import fill, strength
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


@pytest.mark.parametrize("line,path,kind", [
    ("# ... rest of the file unchanged ...", "m.py", "strong"), ("# ... existing code ...", "m.py", "strong"),
    ("    # ... unchanged ...", "m.py", "strong"), ("// ... existing code ...", "m.js", "strong"),
    ("{/* ... */}", "m.jsx", "strong"), ("/* rest of the class unchanged */", "m.js", "strong"),
    ("[... rest of document unchanged ...]", "m.md", "strong"), ("# ...", "m.py", "strong"),
    ("<!-- ... -->", "m.html", "strong"), ("// Rest of the code remains the same", "m.js", "strong"),
    ("# ... (2 more) ...", "m.py", "strong"), ("# existing code", "m.py", "strong"),
    ("    ...  # unchanged", "m.py", "weak"), ("    pass  # same as before", "m.py", "weak"),
    ("    ...", "m.py", "weak"),
])
def test_placeholders_are_recognised(line, path, kind):
    assert strength(line, path) == kind


@pytest.mark.parametrize("line,path", [
    ("# keep the existing code path for py2 because of a bug in the parser on windows", "m.py"),
    ("x = 1  # unchanged", "m.py"), ("return rest", "m.py"), ("def foo(): ...", "m.py"),
    ("# TODO: handle other cases", "m.py"), ("print('...')", "m.py"), ("# Process the rest of the items", "m.py"),
    ("# value stays unchanged when empty", "m.py"), ("# NOTE: the rest of this is legacy", "m.py"), ("", "m.py"),
    ("from ...utils import auto_docstring, logging", "m.py"), ("x = f(...)", "m.py"),
    # the review's real comments and lines, each once taken for a placeholder
    ("# Same for y", "m.py"), ("# TODO: same as before?", "m.py"), ("  # same as production", "c.yaml"),
    ("; unchanged from upstream", "c.ini"), ("% same as the paper", "p.tex"), ("/// Same as `a`.", "m.rs"),
    ("# refactored from original implementation", "m.py"), ("# for the rest of the function.", "m.py"),
    ("# Get architecture and endianness from the original file", "m.py"), ("# Helpers", "m.py"),
    ("# Original implementation, kept for reference", "m.py"), ('    ("abc", "abc", "same"),', "m.py"),
    ('    ("unchanged", "Unchanged"),', "m.py"), ("* No changes.", "CHANGELOG.md"), ("### No changes", "m.md"),
    ("## Existing functions", "m.md"), ("  --dry-run   no changes", "m.txt"), ("...     [", "m.py"),
    ("    ...", "m.md"), ("...", "m.c"),
])
def test_ordinary_lines_and_comments_are_not_placeholders(line, path):
    assert strength(line, path) is None


@pytest.mark.parametrize("output", [
    f"import os\n\n\n{PARSED}\n\n# ... rest of the file unchanged ...\n",  # for the definitions after
    f"# ... existing code ...\n\n\n{PARSED}\n\n# ... existing code ...\n",  # for the lines before and after
    f"import os\n\n\n{PARSED}# ... rest of the file unchanged ...\n",  # no blank line: right after a changed line
    GOAL.replace("    return x + 1", "    ...  # unchanged"),  # for another function's body
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
    res = run(tmp_path, "fix", "m.md", "fix the typo in the first paragraph", "--apply",
              "--no-focus")  # the whole file: its placeholder
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


@pytest.mark.parametrize("old,new,instruction", [
    ("class A:\n    def m(self):\n        return 1\n", "class A:\n    @abstractmethod\n    def m(self):\n        ...\n",
     "make A.m abstract"),
    ("def f(x):\n    return x + 1\n\n\ndef g():\n    return 2\n", "def f(x):\n    ...\n\n\ndef g():\n    return 2\n",
     "replace the body of f with an ellipsis"),  # f is named, and so is the ellipsis
    ("class Reader:\n    def read(self):\n        return 1\n",
     "class Reader(Protocol):\n    def read(self):\n        ...\n",
     "turn Reader into a structural type for static checking"),  # the class is named
    ('def f(x):\n    """\n    >>> f(-1)\n    Traceback (most recent call last):\n      File "<stdin>", line 1\n'
     '    ValueError: negative\n    """\n',
     'def f(x):\n    """\n    >>> f(-1)\n    Traceback (most recent call last):\n    ...\n'
     '    ValueError: negative\n    """\n', "simplify the traceback in the doctest"),  # a doctest's ...
    ("x = clamp(x)\ny = y\n", "x = clamp(x)\n# Same for y\ny = clamp(y)\n", "clamp y too, with a comment"),
    ("def f(x):\n    if x > 0:\n        x -= 1\n    return x\n",
     "def f(x):\n    if x > 0:\n        x -= 1\n    else:\n        # no change\n        pass\n    return x\n",
     "add an explicit else branch to f that documents x stays as is"),
    ("def f(x):\n    return x + 1\n", "def f(x):\n    return x + 2\n\n\n# Original implementation, kept for "
     "reference\ndef f_old(x):\n    return x + 1\n", "change f to add 2; keep the old version as f_old"),
    ("# Changelog\n\n## 1.2\n\n* Fixed a crash.\n", "# Changelog\n\n## 1.3\n\n* No changes.\n\n## 1.2\n\n"
     "* Fixed a crash.\n", "add a 1.3 entry saying there were no changes"),
])
def test_the_models_own_lines_are_kept(old, new, instruction):
    path = "CHANGELOG.md" if old.startswith("# Changelog") else "m.py"
    assert fill(old, new, instruction, path) == (new, False)


def test_a_bare_ellipsis_is_a_placeholder_only_for_a_whole_body_of_an_unnamed_definition():
    old = "class P(Protocol):\n    def m(self) -> int:\n        ...\n\n\n" + MODULE
    new = old.replace("return t.split()", "return t.lower().split()")
    assert fill(old, new.replace("    return x + 1", "    ..."), ASK, "m.py") == (new, True)  # the file had `...`


@pytest.mark.parametrize("old,new,instruction", [
    (MODULE, "# ... existing code ...\n\n\ndef main(x):\n    return parse(x)\n", "give main a parameter"),
    ("def f(xs):\n    for x in xs:\n        if x:\n            a = 1\n            b = 2\n            c = 3\n"
     "        else:\n            d = 4\n    return xs\n", "def f(xs):\n    for x in xs:\n        if x:\n"
     "            # ... existing code ...\n            e = 5\n        else:\n            d = 4\n    return xs\n",
     "in f, add e = 5 after c = 3"),
    (MODULE, "import sys\n\n# ... existing code ...\n", "import sys at the top"),
    ("x = 1\ny = 2", "# ... existing code ...\nz = 3\n", "add z = 3"),
    (MODULE, GOAL.replace("    return x + 1", "    # ... unchanged ...\n    pass"), ASK),  # `pass` is the model's
    ("def f():\n    return 1\n\n\ndef g():\n    return 2\n", "def f():\n    pass\n\n\n# ... rest of the file "
     "unchanged ...\n", "make f do nothing"),
    ("def a():\n    return 1\n\n\ndef b():\n    return 2\n",
     "def a():\n    return 1\n\n\ndef a2():\n    return 3\n\n\n# ... rest of the file unchanged ...\n",
     "add a function a2 returning 3 after a"),
])
def test_a_placeholder_beside_new_lines_whose_original_cannot_be_told_is_refused(old, new, instruction):
    """Each once put the original back in the wrong place (or not at all), losing lines: now refused."""
    with pytest.raises(EditError, match="which original lines it stands for is unclear"):
        fill(old, new, instruction, "m.py")


def test_a_placeholder_is_filled_whatever_the_instruction_says():
    old = '<form>\n  <input name="q">\n</form>\n\n<footer>\n  <p>(c) 2024</p>\n</footer>\n'
    new = '<form>\n  <input name="q" placeholder="Search">\n</form>\n\n<!-- ... rest of the file unchanged ... -->\n'
    assert fill(old, new, "add a placeholder to the search input", "i.html") == (
        old.replace('name="q"', 'name="q" placeholder="Search"'), True)
    assert fill(MODULE, f"import os\n\n\n{PARSED}\n\n# ... rest of the file unchanged ...\n", ASK + "...",
                "m.py") == (GOAL, True)


def test_a_placeholder_then_new_functions_appends_them_to_the_whole_file():
    new = "# ... existing code ...\n\n\ndef main2():\n    return parse('c d')\n"
    assert fill(MODULE, new, "add a main2 function", "m.py") == (MODULE + "\n\ndef main2():\n    return parse('c d')\n",
                                                                 True)


SHAPES = '''import math


class Shape:
    def __init__(self, w, h):
        self.w = w
        self.h = h

    def perimeter(self):
        return 2 * (self.w + self.h)


def unit():
    return Shape(1, 1)


if __name__ == "__main__":
    print(unit())
'''
AREA = "    def area(self):\n        return self.w * self.h\n"
WITH_AREA = SHAPES.replace("(self.w + self.h)\n", "(self.w + self.h)\n\n" + AREA)


@pytest.mark.parametrize("new", [
    "class Shape:\n    # ... existing code ...\n\n" + AREA,  # the class alone (the merge puts back the rest)
    "class Shape:\n    # ... existing methods ...\n\n" + AREA + "\n\n# ... rest of the file unchanged ...\n",
    SHAPES.split("class Shape")[0] + "class Shape:\n    # ... existing code ...\n\n" + AREA + "\n    # ...\n\n\n"
    + "def unit" + SHAPES.split("def unit")[1],
])
def test_a_placeholder_then_a_new_method_appends_it_to_its_class(new):
    out, filled = fill(SHAPES, new, "add an area method to Shape", "m.py")
    assert filled
    assert out in (WITH_AREA, WITH_AREA.split("import math\n\n\n")[1])  # the lines before the class: the merge's


@pytest.mark.parametrize("focus", [[], ["--no-focus"]])
def test_adding_a_method_as_a_placeholder_and_the_method_edits_the_file_end_to_end(tmp_path, model, focus):
    (tmp_path / "m.py").write_text(SHAPES)
    model["text"] = "class Shape:\n    # ... existing code ...\n\n" + AREA + "```\n"
    res = run(tmp_path, "fix", "m.py", "add an area method to Shape", "--apply", *focus)
    assert res.exit_code == 0, res.stderr
    assert (tmp_path / "m.py").read_text() == WITH_AREA


def test_a_placeholder_then_a_new_function_before_an_anchor_adds_it_there():
    square = "def square(n):\n    return Shape(n, n)\n\n\n"
    new = "# ... existing code ...\n\n\n" + square + "if __name__" + SHAPES.split("if __name__")[1]
    out, filled = fill(SHAPES, new, "add a square function", "m.py")
    assert filled and out == SHAPES.replace("\n\nif __name__", "\n\n" + square + "if __name__")


@pytest.mark.parametrize("new", [
    "class Shape:\n    # ... existing code ...\n\n    x = 1\n",  # a statement
    "# ... existing code ...\n\n\ndef square(n):\n    return Shape(n, n)\n\n\n# ... rest of the file ...\n",
])
def test_a_placeholder_beside_more_than_new_definitions_is_still_refused(new):
    with pytest.raises(EditError, match="unclear"):
        fill(SHAPES, new, "change Shape", "m.py")


def test_a_new_method_whose_closing_brace_matched_another_ones_goes_after_that_one_not_inside_it():
    old = "class Cart {\n  constructor(items) {\n    this.items = items;\n  }\n\n  total() {\n    return 1;\n  }\n}\n"
    count = "  count() {\n    return this.items.length;\n  }\n"
    new = "class Cart {\n  // ... existing code ...\n\n" + count + "}\n\nmodule.exports = Cart;\n"
    out = old.replace("  }\n}\n", "  }\n\n" + count + "}\n")  # once: count() written inside total(), before its `}`
    tail = "\nmodule.exports = Cart;\n"
    assert fill(old + tail, new, "add count", "cart.js") == (out + tail, True)
    assert fill(old, new.split("\nmodule")[0], "add count", "cart.js") == (out, True)


def test_adding_a_javascript_method_as_a_placeholder_and_the_method_edits_the_file_end_to_end(tmp_path, model):
    old = ("class Cart {\n  constructor(items) {\n    this.items = items;\n  }\n\n  total() {\n    return 1;\n  }\n}\n"
           "\nmodule.exports = Cart;\n")
    count = "  count() {\n    return this.items.length;\n  }\n"
    (tmp_path / "cart.js").write_text(old)
    model["text"] = "class Cart {\n  // ... existing code ...\n\n" + count + "}\n```\n"
    res = run(tmp_path, "fix", "cart.js", "add a count method to Cart", "--apply")
    assert res.exit_code == 0, res.stderr
    assert (tmp_path / "cart.js").read_text() == old.replace("  }\n}\n", "  }\n\n" + count + "}\n")


@pytest.mark.parametrize(("old", "new", "added"), [
    ("export const api = {\n  getUser(id) {\n    return get(id);\n  },\n};\n",
     "export const api = {\n  // ... existing methods ...\n\n  getPost(id) {\n    return post(id);\n  },\n};\n",
     "  getPost(id) {\n    return post(id);\n  },\n"),
    ("const handlers = {\n  onClick(e) {\n    log(e);\n  },\n\n  onKey(e) {\n    log(e);\n  },\n};\n",
     "const handlers = {\n  // ... existing handlers ...\n\n  onHover(e) {\n    log(e);\n  },\n};\n",
     "  onHover(e) {\n    log(e);\n  },\n"),
])
def test_a_placeholder_then_a_new_method_of_an_object_literal_adds_it_after_the_others(old, new, added):
    """Once `getUser(id) {` was taken for the old line `getPost(id) {` rewrote, and getUser was lost."""
    assert fill(old, new, "add a method", "api.js") == (old.replace("  },\n};\n", "  },\n\n" + added + "};\n"), True)
    no_comma = old.replace("  },\n};\n", "  }\n};\n")  # a member added after the last would not parse: refused
    with pytest.raises(EditError, match="unclear"):
        fill(no_comma, new, "add a method", "api.js")
