"""A whole-file edit that replaces or retires lines is written as the model wrote it, not taken for a fragment.

A generator of asked edits of real files and a review (session 28) found each of these outputs read as part of the
file and merged into the original, which put the old lines back beside the new ones with exit 0."""

from __future__ import annotations

import pytest
from editllm.editor.decode import DecodeStats
from editllm.editor.edit import finish_edit
from editllm.editor.errors import EditError
from editllm.editor.source import SourceFile, split_lines
from editllm.editor.wholefile import accounted, is_fragment

BODY = "".join(f"static inline float half_{k}(float x) {{ return x * {k}; }}\n" for k in range(12))
GUARD = f"#ifndef HALF_H_\n#define HALF_H_\n\n#include <stdint.h>\n\n{BODY}\n#endif  /* HALF_H_ */\n"
LICENSED = ("# Copyright 2026 The Team. All rights reserved.\n#\n"
            + "".join(f"# Apache License, Version 2.0, clause {k}: the terms of the License apply.\n" for k in range(8))
            + "\nimport torch\n\n\ndef loss(x):\n    return torch.mean(x)\n\n\ndef grad(x):\n    return x * 2\n")
RETRY = ("import time\n\nimport requests\n\n\ndef fetch(url):\n    for attempt in range(3):\n        try:\n"
         "            return requests.get(url, timeout=5)\n        except requests.ConnectionError:\n"
         "            time.sleep(2 ** attempt)\n    raise RuntimeError(url)\n\n\ndef head(url):\n"
         "    return requests.head(url)\n")
WORKER = ("const encoder = new TextEncoder();\n\n"
          + "".join(f"function step{k}(x) {{\n  return x + {k};\n}}\n\n" for k in range(6))
          + "self.addEventListener('message', (e) => run(e));\nself.postMessage({ inited: true });\n")
FIXME = ("package cache\n\nimport \"sync\"\n\ntype Cache struct {\n\tmu sync.RWMutex\n\tm  map[string]string\n}\n\n"
         "// Get returns the cached value.\n// FIXME: this reads the map without the lock held, so\n"
         "// concurrent Set calls race with it.\nfunc (c *Cache) Get(k string) (string, bool) {\n\tv, ok := c.m[k]\n"
         "\treturn v, ok\n}\n\nfunc (c *Cache) Set(k, v string) {\n\tc.mu.Lock()\n\tdefer c.mu.Unlock()\n"
         "\tc.m[k] = v\n}\n")
WORKFLOW = ("name: ci\non: [push]\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n"
            "      - uses: actions/checkout@v4\n      - uses: actions/setup-python@v5\n"
            "      - run: pip install -e .[test]\n      - run: pytest --cov\n      - name: Upload coverage\n"
            "        uses: codecov/codecov-action@v4\n        with:\n          token: ${{ secrets.CODECOV_TOKEN }}\n")
CJS = ("const path = require('path');\n\nfunction resolveConfig(dir) {\n  return path.join(dir, 'config.json');\n}\n\n"
       "function isHidden(name) {\n  return name.startsWith('.');\n}\n\n"
       "module.exports = { resolveConfig, isHidden };\n")

STYLE = ("pub struct Style {\n    bold: bool,\n}\n\nimpl std::str::FromStr for Style {\n    type Err = String;\n\n"
         "    fn from_str(s: &str) -> Result<Style, String> {\n        Ok(Style { bold: s == \"bold\" })\n    }\n}\n\n"
         "impl std::fmt::Display for Style {\n    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {\n"
         "        write!(f, \"{}\", self.bold)\n    }\n}\n")

EDITS = [
    # a trait impl is named by its path's last part (a probe, session 34: `std`, so the asked deletion was put back)
    ("color.rs", STYLE, "Delete the FromStr impl for Style.",
     STYLE[:STYLE.index("impl std::str::FromStr")] + STYLE[STYLE.index("impl std::fmt::Display"):]),
    ("half.h", GUARD, "Use `#pragma once` instead of the include guard.",
     GUARD.replace("#ifndef HALF_H_\n#define HALF_H_\n", "#pragma once\n").replace("\n#endif  /* HALF_H_ */\n", "")),
    ("loss.py", LICENSED, "Switch the license header to MIT, as an SPDX identifier line.",
     LICENSED.split("#\n")[0] + "# SPDX-License-Identifier: MIT\n" + LICENSED[LICENSED.index("\nimport"):]),
    ("loss.py", LICENSED, "Use the license's SPDX line in place of its text",
     LICENSED.split("#\n")[0] + "# SPDX-License-Identifier: Apache-2.0\n" + LICENSED[LICENSED.index("\nimport"):]),
    ("fetch.py", RETRY, "the retry loop in fetch is redundant now that the session adapter retries",
     RETRY.replace("import time\n\n", "").replace(RETRY[RETRY.index("    for attempt"):RETRY.index("\n\n\ndef head")],
                                                  "    return requests.get(url, timeout=5)")),
    ("worker.js", WORKER, "Post `{ inited: true, version: 2 }` before adding the message listener.",
     WORKER.replace("self.postMessage({ inited: true });\n", "").replace(
         "self.addEventListener", "self.postMessage({ inited: true, version: 2 });\nself.addEventListener")),
    ("cache.go", FIXME, "fix the data race in Get",
     FIXME.replace("// FIXME: this reads the map without the lock held, so\n"
                   "// concurrent Set calls race with it.\n", "")
     .replace("\tv, ok := c.m[k]\n", "\tc.mu.RLock()\n\tdefer c.mu.RUnlock()\n\tv, ok := c.m[k]\n")),
    ("ci.yml", WORKFLOW, "stop uploading coverage to codecov",
     WORKFLOW[:WORKFLOW.index("      - run: pytest --cov")] + "      - run: pytest\n"),
    ("paths.js", CJS, "convert this file to ES modules",
     CJS.replace("const path = require('path');", "import path from 'path';").replace("function ", "export function ")
     .replace("\nmodule.exports = { resolveConfig, isHidden };\n", "")),
]


@pytest.mark.parametrize(("path", "old", "instruction", "new"), EDITS, ids=[e[0] + ":" + e[2][:24] for e in EDITS])
def test_a_whole_edit_that_replaces_or_retires_lines_is_written_as_it_is(path, old, instruction, new):
    assert old != new
    result = finish_edit(SourceFile(path, old), new, instruction, DecodeStats("spec"), new)
    assert result.new_text == new and not result.merged


def test_the_same_losses_without_the_edit_that_explains_them_still_make_a_fragment():
    """Each reading is narrow: the lines go as part of the edit only beside the change that accounts for them."""
    old = split_lines(GUARD)
    assert is_fragment(old, split_lines(GUARD.replace("\n#endif  /* HALF_H_ */\n", "")), "make half_3 triple x")
    retry = split_lines(RETRY)
    assert is_fragment(retry, split_lines(RETRY.replace("import time\n\n", "")), "give fetch a docstring")
    worker = split_lines(WORKER)
    assert is_fragment(worker, split_lines(WORKER.replace("self.postMessage({ inited: true });\n", "")),
                       "add a step6 function")
    assert is_fragment(split_lines(FIXME), split_lines(FIXME.replace("// FIXME: this reads the map without the lock "
                                                                     "held, so\n// concurrent Set calls race with "
                                                                     "it.\n", "")), "add a Len method")
    cut = WORKFLOW[:WORKFLOW.index("      - run: pytest --cov")] + "      - run: pytest -x\n"
    assert is_fragment(split_lines(WORKFLOW), split_lines(cut), "make pytest stop at the first failure")


def test_a_rename_never_counts_the_old_name_as_asked_away():
    """A rename takes the old name out of the whole output, so its words say nothing of what may go: an output
    cut short after the rename stays a fragment."""
    old = split_lines(RETRY)
    renamed = split_lines(RETRY.replace("fetch", "download"))
    cut = renamed[:renamed.index("def head(url):\n") - 2]
    assert not accounted(old, cut, "Rename `fetch` to `download`") & {len(old) - 2, len(old) - 1}
    assert is_fragment(old, cut, "Rename `fetch` to `download`")


def test_an_unasked_rewrite_of_comments_in_place_is_still_refused():
    """The fragment checks take comments rewritten in place as an edit; whether it was asked is judged apart."""
    new = LICENSED.split("#\n")[0] + "# SPDX-License-Identifier: MIT\n" + LICENSED[LICENSED.index("\nimport"):]
    new = new.replace("return x * 2", "return 2 * x")
    with pytest.raises(EditError, match="leaves out 9 lines from line 2 on"):
        finish_edit(SourceFile("loss.py", LICENSED), new, "write grad as 2 * x", DecodeStats("spec"), new)


def test_a_class_made_a_dataclass_may_drop_the_methods_the_decorator_writes():
    """A review (session 27) found "Make `Mark` a dataclass" refused for dropping `Mark.__init__`; a method the
    decorator does not write is still refused, and a class that stays plain keeps them."""
    old = ("class Mark:\n    def __init__(self, name, line):\n        self.name = name\n        self.line = line\n\n"
           "    def __repr__(self):\n        return f'Mark({self.name})'\n\n    def where(self):\n"
           "        return self.line\n")
    fields = "    name: str\n    line: int\n\n    def where(self):\n        return self.line\n"
    made = "from dataclasses import dataclass\n\n\n@dataclass\nclass Mark:\n" + fields
    assert finish_edit(SourceFile("m.py", old), made, "Make `Mark` a dataclass", DecodeStats("spec"),
                       made).new_text == made
    pydantic = "from pydantic import BaseModel\n\n\nclass Mark(BaseModel):\n" + fields
    assert finish_edit(SourceFile("m.py", old), pydantic, "Make Mark a pydantic model", DecodeStats("spec"),
                       pydantic).new_text == pydantic
    without_where = made[:made.index("\n    def where")] + "\n"
    with pytest.raises(EditError, match="drops Mark.where"):
        finish_edit(SourceFile("m.py", old), without_where, "Make `Mark` a dataclass", DecodeStats("spec"),
                    without_where)
    plain = "class Mark:\n" + fields  # no decorator: shown with one of its methods, the others merged back
    kept = finish_edit(SourceFile("m.py", old), plain, "add type hints", DecodeStats("spec"), plain).new_text
    assert "def __init__(self, name, line):" in kept and "def __repr__(self):" in kept


def test_a_loop_made_an_iterator_chain_is_a_rewrite_not_a_loss():
    """A review (session 27) found a Rust loop that pushed into a `Vec`, made `xs.iter().map(..).collect()`, refused
    as five lost lines: the loop's own variable, accumulator and `push` are not names a rewrite must keep."""
    from editllm.editor.wholefile import no_unasked_code_deletion

    old = split_lines("fn squares(xs: &[i32]) -> Vec<i32> {\n    let mut out = Vec::new();\n    for x in xs {\n"
                      "        out.push(x * x);\n    }\n    out\n}\n")
    chain = split_lines("fn squares(xs: &[i32]) -> Vec<i32> {\n    xs.iter().map(|x| x * x).collect()\n}\n")
    no_unasked_code_deletion("src/sq.rs", old, chain, "use an iterator in squares")
    with pytest.raises(EditError, match="leaves out 5 lines from line 2 on"):  # the body gone, a stub in its place
        no_unasked_code_deletion("src/sq.rs", old, split_lines("fn squares(xs: &[i32]) -> Vec<i32> {\n"
                                                               "    todo!()\n}\n"), "document squares")


HELP = ("import importlib\nimport os\nimport sys\nfrom pathlib import Path\n\n\ndef main():\n"
        "    print(sys.argv)\n\n\nif __name__ == '__main__':\n    main()\n")
DOC = ('""" Build scripts from functions.\n\nThe rest of the story, in a second paragraph.\n"""\nimport os\n\n\n'
       "def run():\n    return os.sep\n")
CYTHON = ("import sys\n\ntry:\n    import cython  # type: ignore\nexcept ImportError:\n    compiled: bool = False\n"
          "else:\n    try:\n        compiled = cython.compiled\n    except AttributeError:\n"
          "        compiled = False\n\n\n"
          "def version_info() -> str:\n    return f'compiled: {compiled} on {sys.platform}'\n\n\n"
          "def python_version() -> str:\n    return sys.version.split()[0]\n\n\n"
          "def is_compiled() -> bool:\n    return compiled\n")
HOSTNAME = ("pub fn hostname() -> Option<String> {\n    std::env::var(\"HOSTNAME\").ok()\n}\n\n#[cfg(test)]\n"
            "mod tests {\n    use super::*;\n\n    #[test]\n    fn print_hostname() {\n"
            "        println!(\"{:?}\", hostname());\n    }\n}\n")

PROBED = [  # a real-model probe (session 28): each of these, written right by the model, was merged or refused
    ("help.py", HELP, "Remove the unused imports",
     HELP.replace("import importlib\nimport os\n", "").replace("from pathlib import Path\n", "")),
    ("help.py", HELP, "Remove the unused import", HELP.replace("import os\n", "")),
    ("build.py", DOC, "Replace the module docstring with a one-line docstring",
     DOC.replace('""" Build scripts from functions.\n\nThe rest of the story, in a second paragraph.\n"""\n',
                 '"""Build scripts from functions."""\n')),
    ("version.py", CYTHON, "Set compiled = False directly instead of trying to import cython",
     CYTHON.replace(CYTHON[CYTHON.index("try:"):CYTHON.index("\n\n\ndef")], "compiled = False")),
    ("hostname.rs", HOSTNAME, "Remove the tests module at the bottom", HOSTNAME[:HOSTNAME.index("\n#[cfg")]),
]


@pytest.mark.parametrize(("path", "old", "instruction", "new"), PROBED, ids=[p[2][:30] for p in PROBED])
def test_real_model_edits_that_the_merge_undid_are_written(path, old, instruction, new):
    result = finish_edit(SourceFile(path, old), new, instruction, DecodeStats("spec"), new)
    assert result.new_text == new and not result.merged


def test_an_import_still_used_or_not_asked_away_is_still_put_back():
    """"Remove the unused imports" lets go only imports the output uses nowhere; without the words, an import
    dropped is a part the model left out."""
    used = HELP.replace("import sys\n", "")
    assert finish_edit(SourceFile("help.py", HELP), used, "Remove the unused imports", DecodeStats("spec"),
                       used).merged
    assert finish_edit(SourceFile("help.py", HELP), PROBED[1][3], "Print the arguments one per line",
                       DecodeStats("spec"), PROBED[1][3]).new_text == HELP
    cut_doc = DOC.replace('\n"""\n', "\n")  # the docstring left open: its closing line is lost, not rewritten
    assert finish_edit(SourceFile("build.py", DOC), cut_doc, "Reword the docstring", DecodeStats("spec"),
                       cut_doc).new_text == DOC


def test_a_go_import_left_out_while_still_used_makes_a_fragment():
    """A generator (session 28): a whole Go file with one line of its import group dropped was written (22 files),
    since a line inside the group is no statement of its own; the package is still used, so it no longer builds."""
    go = ("package gin\n\nimport (\n\t\"net/http\"\n\t\"strings\"\n\n\t\"github.com/pelletier/go-toml/v2\"\n)\n\n"
          "func f(s string) int {\n\treturn len(strings.TrimSpace(s)) + http.StatusOK\n}\n\n"
          "func g(b []byte, v any) error {\n\treturn toml.Unmarshal(b, v)\n}\n")
    for line in ('\t"strings"\n', '\t"github.com/pelletier/go-toml/v2"\n'):
        dropped = go.replace(line, "").replace("+ http.StatusOK", "+ http.StatusAccepted")
        assert is_fragment(split_lines(go), split_lines(dropped), "use StatusAccepted in f")
    unused = go.replace('\t"net/http"\n', "").replace(" + http.StatusOK", "")
    assert not is_fragment(split_lines(go), split_lines(unused), "f should not add the status")


def test_a_comment_in_a_code_file_owns_no_statements_under_it():
    """Without a path, a file with no definitions is read as prose and a `# ` comment as its heading: a TOML key
    dropped under "# License" passed when the instruction said "license" (a generator, session 28)."""
    toml = ('[package]\nname = "tool"\n# License\nlicense = "MIT"\nauthors = ["a"]\nrepository = "x"\n\n'
            '[dependencies]\nserde = "1"\n')
    new = toml.replace('license = "MIT"', 'license = "Apache-2.0"').replace('repository = "x"\n', "")
    ask = "Switch the License to Apache-2.0"
    assert is_fragment(split_lines(toml), split_lines(new), ask, path="Cargo.toml")
    assert not is_fragment(split_lines(toml), split_lines(new), ask)  # read as prose, as before
    md = "# Intro\n\nHello.\n\n# License\n\nMIT, see the file.\n\nMore text.\n"
    assert not is_fragment(split_lines(md), split_lines(md.replace("MIT, see the file.\n\n", "")),
                           "shorten the License section", path="README.md")


def test_what_a_review_found_the_first_rules_let_through_is_caught():
    """A review (session 28) built outputs that lose lines yet looked like the edits these rules account for; each is
    refused or merged back, as before the rules."""
    from editllm.editor.wholefile import no_unasked_code_deletion

    body = "".join(f"    step{k}(x)\n" for k in range(6))
    code = split_lines(f"def run(x):\n    start(x)\n{body}    return x\n\n\ndef other():\n    return 1\n")
    dropped = [line for line in code if "step" not in line]
    dropped[0] = "def run(x, verbose=False):\n"  # the signature names what the lost run used: no rewrite of it
    for ask in ("Switch run to take a verbose keyword (default False)", "Add a verbose parameter to run"):
        with pytest.raises(EditError, match="leaves out 6 lines"):
            no_unasked_code_deletion("r.py", code, dropped, ask)
    esm = split_lines("import { a } from 'a';\nimport b from 'b';\nimport { fileURLToPath } from 'node:url';\n\n"
                      "export const dir = fileURLToPath(import.meta.url);\nexport const x = a + 1;\n")
    assert not accounted(esm, [line for line in esm if "node:url" not in line], "Remove the unused imports")
    future = split_lines("from __future__ import annotations\n\nimport os\n\n\ndef f(p: Path) -> str:\n"
                         "    return os.sep\n")
    assert not accounted(future, future[2:], "Remove the unused imports")
    swapped = split_lines("import re\nimport os\n\n\ndef f(s):\n    return re.sub('a', 'b', os.sep + s)\n")
    added = ["import json\n"] + swapped[1:] + ["\n\ndef g(s):\n", "    return json.dumps(s)\n"]
    assert 0 not in accounted(swapped, added, "Add a g that dumps JSON")
    header = split_lines("#ifndef H_\n#define H_\n\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n\nint f(void);\n"
                         "int g(void);\nint h(void);\n\n#ifdef __cplusplus\n}\n#endif\n\n#endif\n")
    pragma = ["#pragma once\n", "\n", "int f(void);\n", "int g(void);\n", "int h(void);\n"]
    assert {3, 4, 5, 12, 13} - accounted(header, pragma, "Use #pragma once instead of the include guard") == {
        3, 4, 5, 12, 13}  # the guard goes; the extern "C" wrappers are no part of it
    tests = split_lines("pub fn a() -> u32 {\n    1\n}\n\n#[test]\nfn checks_a() {\n    assert_eq!(a(), 1);\n}\n")
    assert is_fragment(tests, tests[:4] + tests[5:], "make a return 1 as a u32")  # the test no longer runs
    plain = "class P:\n    def __init__(self, x):\n        self.x = x\n\n    def size(self):\n        return 1\n"
    unasked = "from dataclasses import dataclass\n\n\n@dataclass\nclass P:\n    def size(self):\n        return 2\n"
    with pytest.raises(EditError, match=r"drops P.__init__"):
        finish_edit(SourceFile("p.py", plain), unasked, "make size return 2", DecodeStats("spec"), unasked)


def test_a_long_comment_that_ends_in_a_todo_is_the_files_own():
    from editllm.editor.wholefile import _marked

    lines = split_lines("# How the cache works, at length.\n# Entries expire after an hour.\n#\n# TODO: make the hour\n"
                        "# configurable.\nx = 1\n")
    assert _marked(lines) == {3, 4}


def test_a_go_package_swapped_for_a_new_version_is_no_import_left_out():
    go = 'package p\n\nimport (\n\t"math/rand"\n)\n\nfunc f() int {\n\treturn rand.Intn(3)\n}\n'
    v2 = go.replace('"math/rand"', '"math/rand/v2"').replace("rand.Intn(3)", "rand.IntN(3)")
    assert not is_fragment(split_lines(go), split_lines(v2), "use math/rand/v2")


def test_a_second_review_of_the_rules_found_these_and_they_hold():
    """A second review (session 28): a Go import removed with its last use while a comment still says `path.`, a
    decorator removed as asked in other words ("stop caching"), and an attribute named in the instruction were
    merged back; an attribute lost from a struct that shares its name with an `impl` was written."""
    go = ('package p\n\nimport (\n\t"fmt"\n\t"path"\n)\n\n// Clean returns the cleaned path.\n'
          'func Clean(p string) string {\n\treturn path.Clean(p)\n}\n\nfunc Show(p string) {\n\tfmt.Println(p)\n}\n')
    done = go.replace('\t"path"\n', "").replace("return path.Clean(p)", "return p")
    assert not is_fragment(split_lines(go), split_lines(done), "make Clean return p as it is")
    cached = ("import functools\n\n\n@functools.lru_cache(maxsize=None)\ndef load(name):\n    return open(name).read()"
              "\n\n\ndef other():\n    return 1\n")
    uncached = cached.replace("@functools.lru_cache(maxsize=None)\n", "")
    assert finish_edit(SourceFile("c.py", cached), uncached, "stop caching load", DecodeStats("spec"),
                       uncached).new_text == uncached
    rust = ("#[repr(transparent)]\npub struct Slice([u8]);\n\nimpl Slice {\n    #[inline]\n"
            "    pub fn len(&self) -> usize {\n        self.0.len()\n    }\n}\n\n"
            "#[inline]\npub fn first(s: &Slice) -> u8 {\n    s.0[0]\n}\n")
    assert is_fragment(split_lines(rust), split_lines(rust.replace("#[repr(transparent)]\n", "")),
                       "add a doc comment to Slice")
    assert not is_fragment(split_lines(rust), split_lines(rust.replace("#[inline]\npub fn first", "pub fn first")),
                           "Remove the #[inline] attribute from first")


def test_an_empty_answer_removes_nothing_when_the_instruction_also_changes_something():
    from editllm.editor.focus import merge_focus

    text = ("import os\n\n\ndef parse(s):\n    return s.split(os.sep)\n\n\ndef run(s):\n    return parse(s)\n\n\n"
            "def other():\n    return 1\n")
    with pytest.raises(EditError):
        merge_focus(text, "", "Remove parse and make run return None")
    assert "def parse" not in merge_focus(text, "", "Remove parse and run")


def test_a_named_definition_goes_with_its_comment_and_a_table_with_its_keys():
    """A generator (session 28): "Remove `sanitizeSvg`" with its JSDoc, and "Remove `[palette]`" with its keys, were
    read as fragments (the comment and the keys were blocks of their own) and merged back: nothing changed."""
    ts = ("export function keep(): number {\n\treturn 1;\n}\n\n/**\n * Cleans an SVG.\n */\n"
          "export function sanitizeSvg(s: string): string {\n\treturn s;\n}\n\nexport const x = keep();\n")
    gone = ts.replace("/**\n * Cleans an SVG.\n */\nexport function sanitizeSvg(s: string): string {\n\treturn s;\n}"
                      "\n\n", "")
    assert not is_fragment(split_lines(ts), split_lines(gone), "Remove `sanitizeSvg`.", path="util.ts")
    toml = ('[ui]\ntheme = "dark"\n\n[palette]\nred = "#f00"\nblue = "#00f"\n\n[profile.release]\ndebug = true\n\n'
            '[profile.bench]\ndebug = true\n')
    no_palette = toml.replace('[palette]\nred = "#f00"\nblue = "#00f"\n\n', "")
    assert not is_fragment(split_lines(toml), split_lines(no_palette), "Remove `[palette]`.", path="theme.toml")
    cut = toml[:toml.index("[profile.bench]")]  # cut after the edit: `profile` names the release table only
    assert is_fragment(split_lines(toml), split_lines(cut.replace("debug = true\n\n", "debug = false\n\n")),
                       "Set debug to false in `[profile.release]`", path="Cargo.toml")


def test_a_definitions_comment_dropped_while_it_is_edited_is_put_back():
    """A review (session 28): naming `decode` to edit it is no request to drop its doc comment."""
    rust = ("/// Decodes one scalar value.\n///\n/// Returns the value and its length.\n"
            "pub fn decode<B: AsRef<[u8]>>(s: B) -> usize {\n    let s = s.as_ref();\n    s.len()\n}\n\n"
            "pub fn other() -> u8 {\n    1\n}\n")
    edited = rust.replace("/// Decodes one scalar value.\n///\n/// Returns the value and its length.\n", "").replace(
        "pub fn decode<B: AsRef<[u8]>>(s: B)", "pub fn decode(s: &[u8])").replace("    let s = s.as_ref();\n", "")
    assert is_fragment(split_lines(rust), split_lines(edited), "Make decode take a plain byte slice", path="u.rs")


def _without(text: str, part: str) -> str:
    assert part in text
    return text.replace(part, "", 1)


SHELL = ("#!/usr/bin/env sh\n\n#Usage: add  _acme-challenge.www.domain.com   \"XKrxpRBosdIKFzxW\"\n"
         "dns_myapi_add() {\n  fulldomain=$1\n  _info \"Using myapi\"\n  return 0\n}\n\n"
         "#Usage: fulldomain txtvalue\n#Remove the txt record after validation.\n"
         "dns_myapi_rm() {\n  fulldomain=$1\n  txtvalue=$2\n  _info \"Using myapi\"\n  _debug txtvalue \"$txtvalue\"\n"
         "}\n\n####################  Private functions below ##################################\n")
CSS = "".join(f".{name} {{\n  color: #{k}{k}{k}{k}{k}{k};\n  font-weight: normal;\n  font-style: normal;\n}}\n\n"
              for k, name in enumerate(["keyword", "type", "string", "specialchar", "comment", "number"]))
GO_TEST = ("package gin\n\nimport \"testing\"\n\nfunc TestError(t *testing.T) {\n\tt.Log(\"ok\")\n}\n\n"
           "func TestErrorSlice(t *testing.T) {\n\terrs := errorMsgs{{Err: errors.New(\"first\")}}\n"
           "\tassert.Equal(t, `Error #01: first\n\nError #02: second\n`, errs.String())\n}\n\n"
           "func TestErrorDeep(t *testing.T) {\n\tt.Log(\"deep\")\n}\n")
GO_TYPES = ("package render\n\nimport \"net/http\"\n\n// JSON contains the given interface object.\n"
            "type JSON struct {\n\tData any\n}\n\n"
            "// AsciiJSON contains the given interface object.\ntype AsciiJSON struct {\n\tData any\n}\n\n"
            "// Render writes data.\nfunc (r JSON) Render(w http.ResponseWriter) error {\n\treturn nil\n}\n")
RUST_TESTS = ("use super::*;\n\n// A different case of slow_chain.\n#[test]\n"
              "fn slow_chain4() {\n    let _ = run(b\"a\");\n"
              "}\n\n// A different case of slow_chain.\n#[test]\nfn slow_chain5() {\n    let _ = run(b\"b\");\n}\n\n"
              "#[test]\nfn fast() {\n    let _ = run(b\"c\");\n}\n")
RUST_STRUCT = ("/// The configuration knobs.\n#[derive(Debug, Default)]\npub struct Config {\n    size: usize,\n}\n\n"
               "impl Config {\n    pub fn size(&self) -> usize {\n        self.size\n    }\n}\n\n"
               "pub fn run() -> usize {\n    7\n}\n")
GENERIC_IMPL = ("enum Data<'a> {\n    Text { text: Cow<'a, str> },\n    Bytes { bytes: &'a [u8] },\n}\n\n"
                "impl<'a> Data<'a> {\n    fn from_bytes(bytes: &[u8]) -> Data<'_> {\n        Data::Bytes { bytes }\n"
                "    }\n}\n\nfn main() {\n    println!(\"hi\");\n}\n")
THEME = (
    "inherits = \"base\"\n\n[palette]\n" + "".join(f"vibrant_{c} = \"#{k}{k}{k}{k}{k}{k}\"\n"
                                                  for k, c in enumerate(["blue", "purple", "red", "orange"])))


@pytest.mark.parametrize(("path", "old", "instruction", "new"), [
    # a generator of deletions (session 29): each was refused or merged back ("no change proposed")
    ("dns_myapi.sh", SHELL, "remove the function `dns_myapi_rm`",
     _without(SHELL, SHELL[SHELL.index("#Usage: fulldomain"):SHELL.index("####")])),
    ("desert.css", CSS, "remove the rule `.number`",
     _without(CSS, ".number {\n  color: #555555;\n  font-weight: normal;\n  font-style: normal;\n}\n\n")),
    ("errors_test.go", GO_TEST, "remove the function `TestErrorSlice`",
     _without(GO_TEST, GO_TEST[GO_TEST.index("func TestErrorSlice"):GO_TEST.index("func TestErrorDeep")])),
    ("json.go", GO_TYPES, "remove the type `AsciiJSON`",
     _without(GO_TYPES, "// AsciiJSON contains the given interface object.\n"
                        "type AsciiJSON struct {\n\tData any\n}\n\n")),
    ("mod.rs", RUST_TESTS, "remove the function `slow_chain4`",
     _without(RUST_TESTS, "// A different case of slow_chain.\n#[test]\nfn slow_chain4() {\n    let _ = run(b\"a\");\n"
                          "}\n\n")),
    ("syntax.rs", RUST_STRUCT, "remove the struct `Config`",
     _without(RUST_STRUCT, "/// The configuration knobs.\n#[derive(Debug, Default)]\npub struct Config {\n"
                           "    size: usize,\n}\n\n")),
    ("theme.toml", THEME, "remove the key `vibrant_orange`", _without(THEME, "vibrant_orange = \"#333333\"\n")),
    ("jsont.rs", GENERIC_IMPL, "remove the impl block `impl<'a> Data<'a>`",
     _without(GENERIC_IMPL, GENERIC_IMPL[GENERIC_IMPL.index("impl<'a>"):GENERIC_IMPL.index("fn main")])),
])
def test_a_named_block_removed_as_asked_is_written_as_it_is(path, old, instruction, new):
    old_lines, new_lines = split_lines(old), split_lines(new)
    assert not is_fragment(old_lines, new_lines, instruction, path)
    result = finish_edit(SourceFile(path, old), new, instruction, DecodeStats("spec"), new)
    assert result.new_text == new and not result.merged


def test_a_css_rule_that_loses_a_declaration_unasked_makes_a_fragment():
    """Once "delete the `.keyword` rule" was written whole, a generator's output that also dropped two declarations
    of `.specialchar` was written with them lost; a rule's declarations are its statements."""
    asked = _without(CSS, ".keyword {\n  color: #000000;\n  font-weight: normal;\n  font-style: normal;\n}\n\n")
    lossy = asked.replace(".specialchar {\n  color: #333333;\n  font-weight: normal;\n  font-style: normal;\n",
                          ".specialchar {\n  color: #333333;\n")
    assert is_fragment(split_lines(CSS), split_lines(lossy), "delete the `.keyword` rule", "desert.css")
    assert not is_fragment(split_lines(CSS), split_lines(lossy), "remove font-weight and font-style from "
                           "`.specialchar` and delete the `.keyword` rule", "desert.css")


WARN = ("import sys\n\n\ndef warn(msg):\n    print('\\033[33m' + msg + '\\033[0m')\n\n\n"
        "if __name__ == \"__main__\":\n    warn(\" \".join(sys.argv[1:]))\n")
BACKUP = ("#!/bin/bash\nset -euo pipefail\n\nRED='\\033[0;31m'\nNC='\\033[0m'\n\n# Print usage and exit\nusage() {\n"
          "  echo \"Usage: $0 <dir> [dest]\"\n  exit 1\n}\n\n"
          "die() {\n  echo -e \"${RED}error:${NC} $*\" >&2\n  exit 1\n}\n\n"
          "backup() {\n  local src=$1 dest=${2:-/mnt/backup}\n  [ -d \"$src\" ] || die \"no such directory: $src\"\n"
          "  rsync -a \"$src\" \"$dest\"\n}\n\n[ $# -ge 1 ] || usage\nbackup \"$@\"\n")
SITE = ("/* Site header */\n#logo { float: left; }\n.banner {\n  background: #c00;\n  color: white;\n}\n\n"
        "/* Links */\na {\n  color: #06c;\n  text-decoration: none;\n}\n")
CONFIG = ("package config\n\nimport \"time\"\n\n// Config holds the server settings read from config.yaml.\n"
          "// Zero values mean \"use the default\".\n"
          "type Config struct {\n\tAddr    string\n\tTimeout time.Duration\n}\n\n"
          "func (c *Config) Validate() error {\n\treturn nil\n}\n")


@pytest.mark.parametrize(("path", "old", "instruction", "new", "kept"), [
    # a review of session 29's naming (each was written with the line lost, refused or merged before it)
    ("warn.py", WARN, "make warn print to stderr",  # `'\033[33m'` left a `[` open: the guard was held by warn
     WARN.replace("'\\033[0m')", "'\\033[0m', file=sys.stderr)").split("\n\n\nif")[0] + "\n",
     'if __name__ == "__main__":'),
    ("backup.sh", BACKUP, "make backup pass 'not a directory' to die",  # named in passing, not asked away
     BACKUP.replace("die() {\n  echo -e \"${RED}error:${NC} $*\" >&2\n  exit 1\n}\n\n", "")
     .replace("no such directory", "not a directory"), "die() {"),
    ("site.css", SITE, "remove the .banner rule",  # `#logo {` is a rule, not a comment of `.banner`
     SITE.replace("#logo { float: left; }\n.banner {\n  background: #c00;\n  color: white;\n}\n", ""),
     "#logo { float: left; }"),
    ("config.go", CONFIG, "add a Debug bool field to Config",  # a type edited keeps its doc comment
     CONFIG.replace("// Config holds the server settings read from config.yaml.\n"
                    "// Zero values mean \"use the default\".\n", "")
     .replace("\tTimeout time.Duration\n", "\tTimeout time.Duration\n\tDebug   bool\n"),
     "// Config holds the server settings"),
])
def test_what_the_instruction_only_mentions_is_not_lost(path, old, instruction, new, kept):
    try:
        result = finish_edit(SourceFile(path, old), new, instruction, DecodeStats("spec"), new)
    except EditError:
        return  # refused: nothing lost either
    assert kept in result.new_text


def test_a_rule_written_under_a_shared_head_is_no_rule_left_out():
    """"Style `.type` and `.string` with a single rule": `.string {` goes and `.type, .string {` is written. A rule
    only mentioned counts as named no longer (see above), so the head the output writes names it."""
    shared = (_without(CSS, ".string {\n  color: #222222;\n  font-weight: normal;\n  font-style: normal;\n}\n\n")
              .replace(".type {\n  color: #111111;", ".type, .string {\n  color: #111111;"))
    assert not is_fragment(split_lines(CSS), split_lines(shared), "Style `.type` and `.string` with a single rule",
                           "desert.css")


MANIFESTS = ("---\napiVersion: v1\nkind: Service\nmetadata:\n  name: web\n---\napiVersion: apps/v1\nkind: Deployment\n"
             "metadata:\n  name: web\nspec:\n  replicas: 2\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n"
             "  name: web-config\ndata:\n  level: debug\n")


@pytest.mark.parametrize("kept, instruction", [((0, 1), "Remove the ConfigMap"),
                                                 ((0, 1), "drop the web-config document"),
                                                 ((1, 2), "remove the Service"), ((0, 2), "delete the Deployment")])
def test_a_yaml_document_asked_away_by_its_kind_or_name_goes(kept, instruction):
    """A document of a multi-document YAML file has no name the block rules read (its lines are top-level keys
    that other documents repeat): asked away by its kind or name, the first or last one's removal read as the file
    cut short and was merged back ("no change proposed")."""
    documents = ["---" + d for d in MANIFESTS.split("---")[1:]]
    removed = "".join(documents[k] for k in kept)
    src = SourceFile("k8s.yaml", MANIFESTS)
    assert finish_edit(src, removed, instruction, DecodeStats("rewrite"), "").new_text == removed
    try:  # not asked: merged back or refused
        assert finish_edit(src, removed, "fix the indentation", DecodeStats("rewrite"), "").new_text == MANIFESTS
    except EditError as e:
        assert "leaves out" in str(e)
    one = documents[kept[0]]  # another document went too, unasked: read as a fragment, and nothing is lost
    assert finish_edit(src, one, instruction, DecodeStats("rewrite"), "").new_text.count("---") >= 2


def test_a_yaml_document_asked_away_by_kind_and_name_together_goes():
    """A review: "remove the api Deployment" where a Service is called api and another Deployment runs the worker
    (neither word names one document) was put back ("no change proposed"). The kind and name together name it."""
    docs = ["---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: api\nspec:\n  replicas: 2\n",
            "---\napiVersion: v1\nkind: Service\nmetadata:\n  name: api\n",
            "---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: worker\n"]
    src = SourceFile("k8s.yaml", "".join(docs))
    for instruction, gone in (("Remove the api Deployment", 0), ("delete the worker deployment", 2),
                              ("drop the Service called api", 1)):
        left = "".join(d for k, d in enumerate(docs) if k != gone)
        assert finish_edit(src, left, instruction, DecodeStats("rewrite"), "").new_text == left
    try:  # the pair names one document: another one's removal is not asked
        assert finish_edit(src, docs[1] + docs[2], "Remove the api Service", DecodeStats("rewrite"), "").new_text \
            == "".join(docs)
    except EditError as e:
        assert "leaves out" in str(e)


UNITTEST = ("import unittest\n\nfrom calc import add, div\n\n\nclass TestCalc(unittest.TestCase):\n"
            "    def setUp(self):\n        self.a = 6\n\n    def test_add(self):\n"
            "        self.assertEqual(add(self.a, 2), 8)\n\n    def test_div(self):\n"
            "        self.assertEqual(div(self.a, 2), 3)\n\n    def test_div_zero(self):\n"
            "        with self.assertRaises(ZeroDivisionError):\n            div(self.a, 0)\n\n\n"
            "if __name__ == \"__main__\":\n    unittest.main()\n")
PYTEST = ("import pytest\n\nfrom calc import add, div\n\n\n@pytest.fixture\ndef a():\n    return 6\n\n\n"
          "def test_add(a):\n    assert add(a, 2) == 8\n\n\ndef test_div(a):\n    assert div(a, 2) == 3\n\n\n"
          "def test_div_zero(a):\n    with pytest.raises(ZeroDivisionError):\n        div(a, 0)\n")


def test_a_class_taken_apart_into_functions_is_the_whole_file():
    """"Convert these tests to pytest style": the `unittest.TestCase` made functions read as the class left out, and
    the merge put the class back beside its own functions (every test twice, exit 0)."""
    src = SourceFile("test_calc.py", UNITTEST)
    assert finish_edit(src, PYTEST, "Convert these tests to pytest style", DecodeStats("rewrite"), "").new_text \
        == PYTEST
    one = PYTEST[:PYTEST.index("\n\ndef test_div(a)")] + "\n"  # one method dedented: a fragment, merged
    assert "class TestCalc" in finish_edit(src, one, "fix test_add", DecodeStats("rewrite"), "").new_text


def test_a_class_taken_apart_with_a_method_left_out_is_refused():
    """A review: the conversion that drops `test_div_zero` was written (half the methods moved was enough), and two
    methods written without their class for "make save return 22" replaced a four-method class."""
    src = SourceFile("test_calc.py", UNITTEST)
    lossy = PYTEST[:PYTEST.index("\n\ndef test_div_zero")]
    with pytest.raises(EditError, match="takes class TestCalc apart into functions but leaves out test_div_zero"):
        finish_edit(src, lossy, "Convert these tests to pytest style", DecodeStats("rewrite"), "")
    asked = finish_edit(src, lossy, "Convert these tests to pytest style and drop test_div_zero",
                        DecodeStats("rewrite"), "")
    assert asked.new_text == lossy
    async_case = UNITTEST.replace("unittest.TestCase", "unittest.IsolatedAsyncioTestCase").replace(
        "def setUp(self)", "async def asyncSetUp(self)")
    helper = PYTEST.replace("@pytest.fixture\ndef a():", "@pytest.fixture\ndef six():").replace("(a)", "(six)") \
        .replace("(a,", "(six,")  # a review: asyncSetUp, or a helper made a fixture under its own name
    assert finish_edit(SourceFile("test_calc.py", async_case), PYTEST, "Convert these tests to pytest style",
                       DecodeStats("rewrite"), "").new_text == PYTEST
    with_helper = UNITTEST.replace("    def test_add(self):", "    def make_six(self):\n        return 6\n\n"
                                   "    def test_add(self):")
    assert finish_edit(SourceFile("test_calc.py", with_helper), helper, "Convert these tests to pytest style",
                       DecodeStats("rewrite"), "").new_text == helper
    store = ("class Store:\n    def load(self):\n        return 1\n\n    def save(self):\n        return 2\n\n"
             "    def close(self):\n        return 3\n\n    def flush(self):\n        return 4\n")
    fragment = "def load(self):\n    return 1\n\n\ndef save(self):\n    return 22\n"
    try:
        kept = finish_edit(SourceFile("store.py", store), fragment, "make save return 22", DecodeStats("rewrite"),
                           "").new_text
    except EditError:
        return  # refused: nothing lost
    assert "def close(self)" in kept and "def flush(self)" in kept
