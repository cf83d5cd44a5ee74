"""editor/twice.py: a definition written a second time where the file has it."""

from __future__ import annotations

import pytest
from editllm.editor.errors import EditError
from editllm.editor.source import split_lines
from editllm.editor.twice import bindings, drop_reimports, drop_repeats, no_second_definition

MAKEFILE = """GO ?= go

.PHONY: build test

build:
\t$(GO) build ./...

cover: ## Run the tests with coverage
\t$(GO) test -coverprofile=coverage.out ./...
\t$(GO) tool cover -html=coverage.out

clean:
\trm -rf bin
"""
PHONY = MAKEFILE.replace(".PHONY: build test", ".PHONY: build test cover")
COVER = "cover: ## Run the tests with coverage\n\t$(GO) test -coverprofile=coverage.out ./...\n" \
        "\t$(GO) tool cover -html=coverage.out\n"


def test_a_make_rule_written_again_word_for_word_is_left_out():
    """A probe (session 35): "the cover target is missing from .PHONY, add it" fixed `.PHONY` and appended the
    `cover:` rule again (make: "overriding recipe"), exit 0. The copy goes and the asked edit stays; a copy that
    differs is refused; `.PHONY` written twice, or a variable, is no rule."""
    again = PHONY + "\n" + COVER
    assert drop_repeats("Makefile", split_lines(MAKEFILE), split_lines(again)) == (split_lines(PHONY), ["cover"])
    assert drop_repeats("Makefile", split_lines(MAKEFILE), split_lines(PHONY)) == (split_lines(PHONY), [])
    with pytest.raises(EditError, match="defines cover a second time"):
        no_second_definition("Makefile", MAKEFILE, PHONY + "\n" + COVER.replace("coverage.out ./", "c.out ./"))
    no_second_definition("Makefile", MAKEFILE, PHONY + "\n.PHONY: clean\nGO := go1.22\n")
    no_second_definition("notes.txt", MAKEFILE, PHONY + "\n" + COVER.replace("coverage.out ./", "c.out ./"))


@pytest.mark.parametrize(("path", "text", "added"), [
    ("a.js", "function parse(s) {\n  return s;\n}\n", "\nfunction parse(s) {\n  return s.trim();\n}\n"),
    ("a.go", "package a\n\nfunc (b *Bucket) Take() bool {\n\treturn true\n}\n",
     "\nfunc (b *Bucket) Take() bool {\n\treturn false\n}\n"),
    ("a.rs", "pub fn load() -> u32 {\n    1\n}\n", "\npub fn load() -> u32 {\n    2\n}\n"),
    ("a.sh", "log() {\n  echo \"$@\"\n}\n", "\nlog() {\n  echo \"$@\" >&2\n}\n"),
    ("a.lua", "local function clamp(x)\n  return x\nend\n", "\nlocal function clamp(x)\n  return 0\nend\n"),
    ("a.py", "def f():\n    return 1\n", "\n\ndef f():\n    return 2\n"),
])
def test_a_second_definition_that_differs_is_refused(path, text, added):
    with pytest.raises(EditError, match="a second time"):
        no_second_definition(path, text, text + added)
    new, names = drop_repeats(path, split_lines(text), split_lines(text + added))
    assert names == []
    again = added.replace("s.trim()", "s").replace("false", "true").replace("    2", "    1").replace(" >&2", "") \
        .replace("return 0", "return x").replace("return 2", "return 1")
    assert drop_repeats(path, split_lines(text), split_lines(text + again))[0] == split_lines(text)


def test_variants_that_share_a_name_on_purpose_pass():
    go = "package a\n\nfunc init() {\n\tx = 1\n}\n"
    no_second_definition("a.go", go, go + "\nfunc init() {\n\ty = 2\n}\n")
    rs = "#[cfg(unix)]\nfn home() -> u32 {\n    1\n}\n"
    no_second_definition("a.rs", rs, rs + "\n#[cfg(windows)]\nfn home() -> u32 {\n    2\n}\n")
    ts = "function f(a: string): void;\n"
    no_second_definition("a.ts", ts, ts + "function f(a: number): void;\n")  # TypeScript overloads: not judged


def test_the_session_leaves_out_the_copy_and_says_so(tmp_path, monkeypatch, scripted_lm):
    from editllm.api.session import EditSession

    monkeypatch.chdir(tmp_path)
    (tmp_path / "Makefile").write_text(MAKEFILE)
    notes: list[str] = []
    session = EditSession(scripted_lm(PHONY + "\n" + COVER + "```\n"), focus=False, log=notes.append)
    [edit] = session.edit(["Makefile"], "the cover target is missing from .PHONY, add it")
    assert edit.new_text == PHONY
    assert "Makefile: note: the model wrote cover a second time, word for word; the copy is left out" in notes, notes


def test_variants_of_a_make_rule_and_typescript_copies():
    """A second probe (session 36): a `clean:` rule given a variant under `ifeq ... else ... endif`, and a second
    pattern rule (`%.o: %.S` beside `%.o: %.c`), were refused; a TypeScript `export type Discount` written again word
    for word beside a new function passed (TypeScript was not read at all, for its overload signatures)."""
    make = "app:\n\tcc -o app\n\nclean:\n\trm -f app\n"
    variant = make.replace("clean:\n\trm -f app\n", "ifeq ($(OS),Windows_NT)\nclean:\n\tdel app.exe\nelse\nclean:\n"
                           "\trm -f app\nendif\n")
    no_second_definition("Makefile", make, variant)
    no_second_definition("Makefile", make, make + "\n%.o: %.c\n\tcc -c $<\n\n%.o: %.S\n\tcc -c $<\n")
    ts = ("export type Discount = { code: string };\n\nexport function f(a: string): void;\n"
          "export function f(a: any) {\n  return a;\n}\n")
    added = ts + "\nexport type Discount = { code: string };\n\nexport function g(): number {\n  return 1;\n}\n"
    want = ts + "\nexport function g(): number {\n  return 1;\n}\n"
    assert drop_repeats("cart.ts", split_lines(ts), split_lines(added)) == (split_lines(want), ["Discount"])
    with pytest.raises(EditError, match="defines f a second time"):
        no_second_definition("cart.ts", ts, ts + "\nexport function f(b: number) {\n  return b;\n}\n")
    no_second_definition("cart.ts", ts, ts.replace("export function f(a: any)", "export function f(a: number): void;\n"
                                                                                 "export function f(a: any)"))


RUST = "use std::fs;\nuse std::time::Duration;\n\npub struct Config {\n    pub interval: Duration,\n}\n"


@pytest.mark.parametrize(("path", "text", "added", "left_out"), [
    # a probe (session 35): rustc refuses the name defined twice (E0252); the field added beside it is the ask
    ("config.rs", RUST, RUST.replace("use std::time::Duration;\n", "use std::time::{Duration, Duration};\n"
                                     "use std::time::Duration;\n").replace("Duration,\n}",
                                                                            "Duration,\n    pub t: u32,\n}"),
     ["use std::time::{Duration, Duration};"]),
    ("a.py", "import os\nfrom pathlib import Path\n\nX = 1\n", "import os\nfrom pathlib import Path\nimport os\n"
     "from pathlib import (Path)\n\nX = 2\n", ["import os", "from pathlib import (Path)"]),
    ("a.ts", 'import { a, b as c } from "./m";\n\nf();\n',
     'import { a, b as c } from "./m";\nimport { a } from "./m";\n\nf();\n', ['import { a } from "./m";']),
])
def test_an_added_import_of_what_the_file_imports_is_left_out(path, text, added, left_out):
    new, dropped = drop_reimports(path, split_lines(text), split_lines(added))
    assert dropped == left_out
    rest = split_lines(added)
    for line in left_out:  # the last of equal lines: the one added
        del rest[len(rest) - 1 - [x.strip() for x in reversed(rest)].index(line)]
    assert new == rest


@pytest.mark.parametrize(("path", "text", "added"), [
    ("a.py", "from json import loads\n", "from json import loads\nfrom orjson import loads\n"),  # another thing
    ("a.py", "import os\n", "import os\nimport os.path\n"),  # binds os, and loads os.path
    ("a.py", "def f():\n    import os\n", "import os\n\n\ndef f():\n    import os\n"),  # the function's own
    ("a.rs", "use std::io;\n", "use std::io;\nuse std::io::{self, Read};\n"),  # Read is new
    ("a.rs", "use std::io::*;\n", "use std::io::*;\nuse std::io::*;\n"),  # a glob binds no name we can tell
    ("a.ts", 'import a from "./m";\n', 'import a from "./m";\nimport { a } from "./m";\n'),  # default vs named
    ("a.go", 'import "fmt"\n', 'import "fmt"\nimport "fmt"\n'),  # Go's are goimports'
])
def test_an_import_that_binds_something_new_stays(path, text, added):
    assert drop_reimports(path, split_lines(text), split_lines(added)) == (split_lines(added), [])


def test_bindings_of_one_line_imports():
    assert bindings("python", "import a.b as c, d.e\n") == {("c", "a.b"), ("d", "d.e")}
    assert bindings("python", "from .m import x, y as z  # why\n") == {("x", ".m.x"), ("z", ".m.y")}
    assert bindings("rust", "pub use crate::a::{self as m, B};\n") == {("m", "crate::a"), ("B", "crate::a::B")}
    assert bindings("rust", "use std::fmt::Result as FmtResult;\n") == {("FmtResult", "std::fmt::Result")}
    assert bindings("typescript", "import type D, * as ns from 'm'\n") == {("D", "m:default"), ("ns", "m:*")}
    assert bindings("python", "    import os\n") is None
    assert bindings("javascript", 'import "./side-effect.js";\n') is None


def test_the_session_says_which_import_it_left_out(tmp_path, monkeypatch, scripted_lm):
    from editllm.api.session import EditSession

    monkeypatch.chdir(tmp_path)
    (tmp_path / "config.rs").write_text(RUST)
    wrote = RUST.replace("use std::fs;\n", "use std::fs;\nuse std::time::{Duration, Duration};\n")
    notes: list[str] = []
    session = EditSession(scripted_lm(wrote.replace("Duration,\n}", "Duration,\n    pub t: u32,\n}") + "```\n"),
                          focus=False, log=notes.append)
    [edit] = session.edit(["config.rs"], "add a field t: u32 to Config")
    assert edit.new_text == RUST.replace("Duration,\n}", "Duration,\n    pub t: u32,\n}")
    assert edit.result.reimports == ("use std::time::{Duration, Duration};",)
    assert ("config.rs: note: the model added `use std::time::{Duration, Duration};`, which imports only what the "
            "file already imports; left out") in notes, notes
