"""editor/undefined.py: a name an edit starts to use that nothing in the file binds is pointed out on stderr."""

from __future__ import annotations

from editllm.editor.source import read_source
from editllm.editor.undefined import newly_unbound, unbound
from test_file_conventions import run


def test_unbound_names_exclude_every_kind_of_binding():
    text = ("import os.path\nfrom typing import List as L\n\n\nclass C:\n    pass\n\n\n"
            "def f(a, *b, c=1, **d) -> L:\n    global G\n    try:\n        x = [y for y in a]\n"
            "    except ValueError as e:\n        raise e\n    match a:\n        case {'k': k, **rest}:\n"
            "            return k, rest\n        case [first, *others] as whole:\n"
            "            return first, others, whole\n"
            "    with open(os.path.join('p')) as fh:\n        return x, b, c, d, fh, C, len, __name__, missing\n")
    assert unbound(text) == {"missing"}
    assert unbound("from os import *\nprint(anything)\n") is None  # a star import: cannot tell
    assert unbound("def f(:\n") is None


def test_only_names_the_edit_brings_in_count():
    old = "def f(x):\n    return helper(x)\n"  # `helper` was unbound before: not the edit's doing
    new = "def f(x: FrozenSet[str]) -> Optional[int]:\n    return helper(x)\n"
    assert newly_unbound("m.py", old, new) == ["FrozenSet", "Optional"]
    assert newly_unbound("m.py", old, "from typing import Optional\n\n\n" + new) == ["FrozenSet"]
    assert newly_unbound("m.js", old, new) == []


def test_a_name_bound_only_in_another_function_counts():
    """The probe's colorsys.py edit: `v` read in hls_to_rgb, bound only as hsv_to_rgb's parameter."""
    old = "def hsv_to_rgb(h, s, v):\n    return v, v, v\n\n\ndef hls_to_rgb(h, l, s):\n    return l, l, l\n"
    assert newly_unbound("c.py", old, old.replace("return l, l, l", "return v, l, s")) == ["v"]
    seen = ("X = 1\n\n\nclass C:\n    k = 2\n\n    def m(self):\n        global G\n        G = 3\n\n"
            "    j = k + 1\n\n    def n(self, a=X, b=k):\n        def inner():\n            return a, X, G\n"
            "        return inner\n")
    assert unbound(seen) == set()  # enclosing function, module, `global`; the class body's own names in it
    assert unbound(seen.replace("return a, X, G", "return a, X, G, k")) == {"k"}  # a class attribute, bare


def test_the_cli_notes_an_unbound_name_on_stderr_and_still_writes_the_diff(tmp_path, model):
    (tmp_path / "m.py").write_text("def split_what(what):\n    return set(what)\n")
    model["text"] = "def split_what(what: list) -> FrozenSet[str]:\n    return set(what)\n```\n"
    res = run(tmp_path, "fix", "m.py", "add type hints to split_what")
    assert res.exit_code == 0 and "+def split_what(what: list) -> FrozenSet[str]:" in res.stdout
    assert "m.py: note: the edit uses FrozenSet, which is not defined or imported where it is used" in res.stderr


def test_check_refuses_a_proposal_that_reads_an_undefined_name(tmp_path, model):
    """A pre-commit hook's `check` on a file that met its rule: the model proposed deleting the line that binds
    `sumc`, which the next line reads. Exit 1 ("a change is proposed") failed the commit with a broken fix."""
    text = "def f(a, b):\n    sumc = a + b\n    return sumc / 2.0\n"
    (tmp_path / "m.py").write_text(text)
    model["text"] = "def f(a, b):\n    return sumc / 2.0\n```\n"
    res = run(tmp_path, "check", "m.py", "the module must define __all__")
    assert res.exit_code == 2 and res.stdout == ""
    assert ("m.py: the model's proposal uses sumc, which is not defined or imported where it is used, so it would "
            "break the file; nothing proposed, and the file is not judged either way") in res.stderr
    assert (tmp_path / "m.py").read_text() == text
    res = run(tmp_path, "fix", "m.py", "the module must define __all__")  # fix: the user reads the diff
    assert res.exit_code == 0 and "-    sumc = a + b" in res.stdout and "note: the edit uses sumc" in res.stderr


def test_check_takes_a_proposal_of_comments_alone_for_none(tmp_path, model):
    """A real probe: `check filecmp.py "the code must not use Python 2 print statements"` exited 1 on a file that
    complies, the proposal only a comment reworded."""
    text = "def report(self):\n    # Print reports on self and on subdirs\n    print(self)\n"
    (tmp_path / "m.py").write_text(text)
    model["text"] = text.replace("and on subdirs", "and subdirs") + "```\n"
    res = run(tmp_path, "check", "m.py", "the code must not use Python 2 print statements")
    assert res.exit_code == 0 and res.stdout == ""
    assert "m.py: note: the model's proposal changes only comments or layout" in res.stderr
    res = run(tmp_path, "fix", "m.py", "the code must not use Python 2 print statements")  # fix shows it
    assert res.exit_code == 0 and "+    # Print reports on self and subdirs" in res.stdout


def test_an_asked_for_definition_the_edit_lacks_is_noted(tmp_path, model):
    """A real probe: asked to add a method remaining() to class Chunk, the model wrote a line about it into the
    module docstring and no method; exit 0 with nothing said."""
    from editllm.editor.asks import asked_definitions

    assert asked_definitions("add a method remaining() to the Chunk class") == ["remaining"]
    assert asked_definitions("add a clear() method to scheduler") == ["clear"]
    assert asked_definitions("add a __repr__ to SectionWrapper") == []  # no kind of definition named
    # what the function does, not its name (a probe, session 34: "asks for that, which the edit does not define")
    assert asked_definitions("Add a function that parses the metadata version right after get_metadata_version") == []
    assert asked_definitions("add a helper to format dates") == []
    text = '"""Chunks."""\n\n\nclass Chunk:\n    def read(self):\n        return 1\n'
    (tmp_path / "m.py").write_text(text)
    model["text"] = text.replace('"""Chunks."""', '"""Chunks.\n\nremaining() returns the bytes left."""') + "```\n"
    res = run(tmp_path, "fix", "m.py", "add a method remaining() to the Chunk class")
    assert res.exit_code == 0 and "m.py: note: the instruction asks for remaining, which the edit does not define" \
        in res.stderr
    model["text"] = text + "\n    def remaining(self):\n        return 0\n```\n"
    res = run(tmp_path, "fix", "m.py", "add a method remaining() to the Chunk class")
    assert res.exit_code == 0 and "asks for remaining" not in res.stderr


def test_an_asked_for_definition_another_file_of_the_edit_has_is_not_noted(tmp_path, monkeypatch, scripted_lm):
    """A probe (session 37): a two-file edit (sched.py and its test) was told the test file lacked `scheduler`, the
    class sched.py defines."""
    from editllm.api.session import EditSession
    from editllm.editor.undefined import defines

    assert defines("import heapq\n\n\nclass scheduler:\n    pass\n", "scheduler")
    assert defines("async def load():\n    pass\n", "load") and defines("LIMIT = 3\n", "LIMIT")
    assert not defines("x = scheduler()\n", "scheduler")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sched.py").write_text("class scheduler:\n    def clear(self):\n        return 1\n")
    (tmp_path / "test_sched.py").write_text("def test_one():\n    assert True\n")
    test = ("from sched import scheduler\n\n\ndef test_one():\n    assert True\n\n\n"
            "def test_clear():\n    assert scheduler().clear() == 1\n")
    ask = "add a method clear() to scheduler, and a test of it"
    for together, noted in (([], True), ([read_source(tmp_path / "sched.py", "sched.py")], False)):
        notes: list[str] = []
        session = EditSession(scripted_lm(test + "```\n"), focus=False, log=notes.append)
        session.edit_source(read_source(tmp_path / "test_sched.py", "test_sched.py"), ask, together)
        assert any("asks for clear" in n for n in notes) == noted, notes


def test_a_go_edit_that_uses_a_standard_package_it_does_not_import_is_noted():
    """A real-model probe (session 29): focused on one function, the model wrote `fmt.Errorf` and `errors.New` into
    files that imported neither; both parsed, neither compiled. A package imported by the edit, a variable of the
    name, and code in a package's doc comment are no such use (1,655 files of golang/tools, gin and cobra: none)."""
    old = 'package a\n\nimport "strings"\n\nfunc F(s string) (string, error) {\n\treturn strings.TrimSpace(s), nil\n}\n'
    wrapped = old.replace("nil\n", 'fmt.Errorf("bad %s", s)\n')
    assert newly_unbound("a.go", old, wrapped) == ["fmt"]
    imported = wrapped.replace('import "strings"', 'import (\n\t"fmt"\n\t"strings"\n)')
    assert newly_unbound("a.go", old, imported) == []
    shadowed = old.replace("nil\n", 'errors.New("x")\n').replace("(s string)", "(s string, errors E)")
    assert newly_unbound("a.go", old, shadowed) == []
    documented = "/*\nExample:\n\n\tfmt.Println(x)\n*/\n" + old.replace("nil\n", "nil // see fmt.Errorf\n")
    assert newly_unbound("a.go", old, documented) == []
    grouped = old + ("\nvar (\n\tjson = jsoniter.ConfigCompatibleWithStandardLibrary\n)\n\n"
                     "func G(x any) { json.Marshal(x) }\n")
    assert newly_unbound("a.go", old, grouped) == []  # a review: a variable of a `var (` group
    logged = old.replace("\treturn", '\tlog.Printf("trimming %q", s)\n\treturn')  # "add logging" (not noted before)
    assert newly_unbound("a.go", old, logged) == ["log"]


def test_an_instruction_that_edits_in_a_name_the_file_lacks_is_noted(tmp_path, model):
    """A probe (session 38): "In parse_args, add a check that args is a list." on getopt.py, which has no parse_args:
    the model edited two other functions and added a line that never runs, exit 0 without a word."""
    from editllm.editor.undefined import absent_subjects

    text = "def getopt(args):\n    return args\n\n\ndef gnu_getopt(args):\n    return args\n"
    assert absent_subjects(text, "In parse_args, add a check that args is a list.") == ["parse_args"]
    assert absent_subjects(text, "In `gnu_getopt`, return a list.") == []
    assert absent_subjects(text, "In Parser.parse_args(), return a list.") == ["Parser.parse_args"]
    assert absent_subjects(text, "In general, return lists. In Python, use f-strings.") == []  # no code named
    assert absent_subjects(text, "Add parse_args and call it in getopt.") == []  # to be made, not edited in
    (tmp_path / "m.py").write_text(text)
    model["text"] = text.replace("    return args\n", "    return list(args)\n", 1) + "```\n"
    res = run(tmp_path, "fix", "m.py", "In parse_args, add a check that args is a list.")
    assert res.exit_code == 0 and "m.py: note: the instruction edits in parse_args, which the file does not have" \
        in res.stderr
    res = run(tmp_path, "fix", "m.py", "In getopt, return a list.")
    assert res.exit_code == 0 and "which the file does not have" not in res.stderr
