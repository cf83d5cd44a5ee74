"""Nothing the user had is lost to a model's odd output (session 21's audit of whole-file safety): a Python file
that parsed still parses after the edit, and a focused edit never rewrites a definition the model was not shown."""

from __future__ import annotations

import pytest
from editllm.editor.errors import EditError
from editllm.editor.wholefile import ensure_whole
from test_file_conventions import run
from test_input_safety import one_line_error as refused

MODULE = "import os\n\n\ndef parse(t):\n    return t.split()\n\n\ndef helper(x):\n    return x + 1\n\n\n" \
         "def main():\n    return parse('a b')\n"


@pytest.fixture
def model(monkeypatch, scripted_lm) -> dict:
    box: dict = {"text": ""}
    monkeypatch.setattr("editllm.editor.models.load_model", lambda *a, **k: scripted_lm(box["text"] + "```\n"))
    return box


def test_output_cut_short_inside_a_definition_is_refused(tmp_path, model):
    old = "def f():\n    a = 1\n    b = 2\n    c = 3\n    return a + b + c\n\n\ndef g():\n    return 0\n"
    (tmp_path / "e.py").write_text(old)
    model["text"] = old.replace("    return 0\n", "")  # the model closed its block after `def g():`
    refused(run(tmp_path, "fix", "e.py", "make g return 1", "--no-focus", "--apply"), "no longer valid Python")
    assert (tmp_path / "e.py").read_text() == old


def test_a_line_of_the_models_prose_in_python_is_refused(tmp_path, model):
    (tmp_path / "m.py").write_text(MODULE)
    model["text"] = "Here is the updated function:\n\ndef parse(t):\n    return t.lower().split()\n"
    refused(run(tmp_path, "fix", "m.py", "make parse lowercase its input"), "no longer valid Python")


def test_a_python_file_that_did_not_parse_before_is_not_judged(tmp_path, model):
    old = "def f(:\n    return 1\n"
    (tmp_path / "m.py").write_text(old)
    model["text"] = "def f(:\n    return 2\n"
    res = run(tmp_path, "fix", "m.py", "return 2", "--no-focus")
    assert res.exit_code == 0 and "+    return 2\n" in res.stdout


@pytest.mark.parametrize("output", [
    "def helper(x):\n    return x + 2\n",  # another function than the one asked for
    "def helper(t):\n    return t.lower()\n\n\ndef parse(t):\n    return helper(t).split()\n",  # a name the file uses
    MODULE.replace("return x + 1", "return x + 100").replace("t.split()", "t.lower().split()"),  # the whole file
])
def test_a_focused_edit_never_rewrites_a_definition_the_model_was_not_shown(tmp_path, model, output):
    (tmp_path / "m.py").write_text(MODULE)
    model["text"] = output
    res = run(tmp_path, "fix", "m.py", "make parse lowercase its input", "--apply")
    refused(res, "the model wrote helper, which it was not shown")
    assert (tmp_path / "m.py").read_text() == MODULE


def test_a_focused_edit_may_still_add_a_new_helper(tmp_path, model):
    (tmp_path / "m.py").write_text(MODULE)
    model["text"] = "def lowered(t):\n    return t.lower()\n\n\ndef parse(t):\n    return lowered(t).split()\n"
    res = run(tmp_path, "fix", "m.py", "make parse lowercase its input")
    assert res.exit_code == 0, res.stderr
    assert "+def lowered(t):" in res.stdout and "-    return x + 1" not in res.stdout


def test_a_method_dropped_from_a_class_written_whole_is_refused_unless_named(tmp_path, model):
    """It was deleted silently; merged back, it could undo the edit (a class made a dataclass drops `__init__`)."""
    old = ("class A:\n    def f(self):\n        return 1\n\n    def g(self):\n        return 2\n\n\n"
           "def h():\n    return 3\n")
    (tmp_path / "c.py").write_text(old)
    model["text"] = "class A:\n    def f(self) -> int:\n        return 1\n\n\ndef h() -> int:\n    return 3\n"
    refused(run(tmp_path, "fix", "c.py", "add return type hints", "--apply"), "drops A.g")
    assert (tmp_path / "c.py").read_text() == old
    res = run(tmp_path, "fix", "c.py", "add return type hints", "--apply", "--allow-deletions")
    assert res.exit_code == 0 and "def g" not in (tmp_path / "c.py").read_text()
    (tmp_path / "c.py").write_text(old)
    model["text"] = "class A:\n    def f(self):\n        return 1\n\n\ndef h():\n    return 3\n"
    res = run(tmp_path, "fix", "c.py", "remove the method g", "--apply", "--no-focus")  # named: it may go
    assert res.exit_code == 0 and "def g" not in (tmp_path / "c.py").read_text()


@pytest.mark.parametrize("old,new,goal", [
    ("import os\n\nX = 1\nY = 2\nZ = 3\n\n\ndef f():\n    return X + Y + Z\n",
     "import os\n\nX = 1\nY = 5\n\n\ndef f():\n    return X + Y + Z\n",
     "import os\n\nX = 1\nY = 5\nZ = 3\n\n\ndef f():\n    return X + Y + Z\n"),
    # seen in rewrite mode's own outputs (distillation): an import swapped for the logging one it asked for
    ("import os\nfrom .ansi import AnsiDecoder\n\n\ndef f():\n    return AnsiDecoder(os.sep)\n",
     "import os\nimport logging\n\n\ndef f():\n    return AnsiDecoder(os.sep)\n",
     "import os\nimport logging\nfrom .ansi import AnsiDecoder\n\n\ndef f():\n    return AnsiDecoder(os.sep)\n"),
])
def test_a_statement_dropped_beside_a_changed_one_is_kept(old, new, goal):
    """Two lines rewritten as one: each new line stands for one old line, so the one with no counterpart is gone,
    and the output is a fragment (merged: the changed statement replaces the one with its target)."""
    from editllm.editor.wholefile import ensure_whole

    whole = ensure_whole(old, new, "set Y to 5")
    assert whole.merged and whole.text == goal


@pytest.mark.parametrize("old,new", [
    ("A = 1\nB = 2\n\n\ndef f():\n    return A + B\n", "A = B = 1\n\n\ndef f():\n    return A + B\n"),
    ("import os\napp = make()\napp.run()\n", "import os\napp = make()\napp.run(debug=True, port=8000)\n"),
    ("x = compute()\nresult = transform(x)\nprint(result)\n", "result = transform(compute())\nprint(result)\n"),
    ("import os\nimport sys\n\nprint(os.sep, sys.argv)\n", "import os, sys\n\nprint(os.sep, sys.argv)\n"),
    ("from os import path\nfrom os import sep\n\nprint(path, sep)\n", "from os import path, sep\n\nprint(path, sep)\n"),
    ("print('Starting up')\nmain()\n", "logging.info('boot')\nsys.exit(main())\n"),
    ("WIDTH = 3\nHEIGHT = 4\n\nprint(WIDTH * HEIGHT)\n", "WIDTH, HEIGHT = 6, 8\n\nprint(WIDTH * HEIGHT)\n"),
])
def test_statements_folded_together_are_the_users_edit(old, new):
    """The review's cases: a statement rewritten into another (joined, inlined, renamed) leaves no name the output
    still needs, so the output is the edit as written, not a merge that would bring the old statement back."""
    from editllm.editor.wholefile import ensure_whole

    whole = ensure_whole(old, new, "tidy this up")
    assert not whole.merged and whole.text == new


def test_a_long_rewritten_stretch_is_not_paired_line_by_line():
    """Pairing is quadratic (a 400-line rewrite took 15 s): past `PAIRING_LIMIT` pairs a stretch is judged as
    before the pairing existed, by the 3:1 rule alone."""
    from editllm.editor.blocks import PAIRING_LIMIT
    from editllm.editor.wholefile import unmatched

    old = [f"value_{k} = {k}\n" for k in range(100)]
    new = [f"other_{k} = {k * 7}\n" for k in range(100)]
    assert len(old) * len(new) > PAIRING_LIMIT and unmatched(old, new, 0) == set()
    assert unmatched(old[:3], new[:1], 0) == {1, 2}  # short: each new line stands for one old line


SWIFT_CLIENT = '''import Foundation

final class NetworkClient {
    private let baseURL: URL
    private let session: URLSession

    init(baseURL: URL, session: URLSession = .shared) {
        self.baseURL = baseURL
        self.session = session
    }

    func get(_ path: String) async throws -> Data {
        let (data, _) = try await session.data(from: baseURL.appendingPathComponent(path))
        return data
    }
}
'''


def test_a_signature_whose_default_is_a_call_keeps_its_member():
    """A probe (session 36): `init(..., decoder: JSONDecoder = JSONDecoder())` was no member by the method pattern
    (parameters without parentheses), so the class read as having lost `init`: a correct edit refused."""
    new = SWIFT_CLIENT.replace("session: URLSession = .shared) {",
                               "session: URLSession = .shared, decoder: JSONDecoder = JSONDecoder()) {")
    assert ensure_whole(SWIFT_CLIENT, new, "Add a decoder parameter to init.", path="c.swift").text == new
    js = ("class Limiter {\n  constructor(limit) {\n    this.limit = limit;\n  }\n\n"
          "  reset(key) {\n    return key;\n  }\n}\n")
    new = js.replace("reset(key) {", "reset(key, at = Date.now()) {")
    assert ensure_whole(js, new, "Add an at parameter to reset.", path="l.js").text == new


def test_the_constructor_names_each_language_s_constructor():
    """The same probe: "Remove the AuditLog dependency entirely: the property, the constructor, ..." removed PHP's
    `__construct`, refused as a member the instruction does not ask to remove."""
    from editllm.editor.asks import asks_removal

    for name in ("__construct", "__init__", "constructor", "init"):
        assert asks_removal(name, "Remove the constructor.")
    listed = "Remove the AuditLog dependency entirely: the property, the constructor, and every audit call."
    assert asks_removal("__construct", listed)
    assert not asks_removal("__init__", "Remove the cache: keep the constructor as it is.")
    assert not asks_removal("helper", "Add a call to helper in the constructor.")


def test_a_name_after_and_the_in_a_removal_is_asked_away():
    """The second probe: "Remove the discount field from Cart together with the applyDiscount() method" took
    applyDiscount for the object of "from", and a correct edit was refused as dropping Cart.applyDiscount."""
    from editllm.editor.asks import asks_removal

    assert asks_removal("applyDiscount", "Remove the discount field from Cart together with the applyDiscount() "
                                         "method.")
    assert asks_removal("applyDiscount", "Remove the discount field from Cart and the applyDiscount() method.")
    assert not asks_removal("validate", "remove the print from parse and validate")
    assert not asks_removal("validate", "Remove the log from parse and keep the validate helper.")


CART_CS = ("using System.Collections.Generic;\n\nnamespace Shop\n{\n    public class Cart\n    {\n"
           "        private readonly List<decimal> _prices = new List<decimal>();\n\n"
           "        public void Add(decimal price)\n        {\n            _prices.Add(price);\n        }\n\n"
           "        public int Count()\n        {\n            return _prices.Count;\n        }\n    }\n}\n")


@pytest.mark.parametrize("prop", ["public int Count => _prices.Count;",
                                  "public int Count { get { return _prices.Count; } }"])
def test_a_method_made_a_property_keeps_its_name(prop):
    """A probe (session 40): "Make Count a read-only property instead of a method" was refused as "the output
    drops Shop.Cart.Count", the property read as no member of that name. A method dropped outright still is."""
    method = "        public int Count()\n        {\n            return _prices.Count;\n        }\n"
    new = CART_CS.replace(method, f"        {prop}\n")
    assert ensure_whole(CART_CS, new, "Make Count a read-only property instead of a method.").text == new
    with pytest.raises(EditError, match="drops Shop.Cart.Count"):
        ensure_whole(CART_CS, CART_CS.replace("\n" + method, ""), "Make Add log the price.")


ROW_TSX = ('import React from "react";\n\n'
           "type Props = { user: { id: number; name: string }; onDelete: (id: number) => void };\n\n"
           "export function Row({ user, onDelete }: Props) {\n"
           "  return <tr onClick={() => onDelete(user.id)}>{user.name}</tr>;\n}\n")


def test_a_file_that_read_clean_and_no_longer_does_gets_a_note(tmp_path, model):
    """A probe (session 40): a TSX file gained an invalid `onSelect?: ...` in a destructuring pattern, passed as
    syntax a newer grammar might know, without a word. It still passes, with a note."""
    pytest.importorskip("tree_sitter_typescript")
    (tmp_path / "Row.tsx").write_text(ROW_TSX)
    model["text"] = ROW_TSX.replace("{ user, onDelete }: Props", "{ user, onDelete, onSelect?: () => void }: Props")
    res = run(tmp_path, "fix", "Row.tsx", "add an optional onSelect callback", "--no-focus")
    assert res.exit_code == 0 and "+export function Row({ user, onDelete, onSelect?" in res.stdout
    assert "note: the file read clean before, and tree-sitter's TSX" in res.stderr
    model["text"] = ROW_TSX.replace("{user.name}", "{user.name.toUpperCase()}")
    res = run(tmp_path, "fix", "Row.tsx", "upper-case the name", "--no-focus")
    assert res.exit_code == 0 and "tree-sitter" not in res.stderr
