"""editor/syntax.py, Node's part: a JavaScript file that parsed must still parse, by `node --check`."""

from __future__ import annotations

import shutil

import pytest
from editllm.editor.errors import EditError
from editllm.editor.syntax import still_parses_js

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed")

CJS = ("'use strict'\n\nconst path = require('path')\n\nfunction contentPath (cache, integrity) {\n"
       "  return path.join(cache, 'content', integrity)\n}\n\nmodule.exports = contentPath\n")


def test_an_edit_that_breaks_the_syntax_is_refused_with_nodes_reason():
    """A real-model probe (session 28): "Convert this file to ES modules" written with an unbalanced `)`."""
    broken = CJS.replace("const path = require('path')", "import path from 'path')")
    with pytest.raises(EditError, match=r"cp.js: the edited file no longer parses as JavaScript \(line 3: "
                                        r"SyntaxError: Unexpected token '\)', by node --check\)"):
        still_parses_js("cp.js", CJS, broken)
    awaited = CJS.replace("  return path", "  await path.resolve(cache)\n  return path")  # not an async function
    with pytest.raises(EditError, match="no longer parses as JavaScript"):
        still_parses_js("cp.js", CJS, awaited)


def test_a_conversion_to_es_modules_and_files_that_never_parsed_pass():
    esm = (CJS.replace("const path = require('path')", "import path from 'path'")
           .replace("function contentPath", "export default function contentPath")
           .replace("\nmodule.exports = contentPath\n", ""))
    still_parses_js("cp.js", CJS, esm)  # a module now, as asked
    still_parses_js("cp.mjs", esm, esm.replace("'content'", "'data'"))
    still_parses_js("cp.js", "let x = (;\n", "let x = (;;\n")  # did not parse before: not judged
    still_parses_js("cp.ts", "let x: number = 1\n", "let x: number = (\n")  # not JavaScript: not judged


def test_jsx_and_decorators_are_left_to_the_build_step():
    """A review (session 28): the first JSX added to a React hook file (.js) was refused ("Unexpected token '<'")."""
    hook = "export function useTitle(t) {\n  return t\n}\n"
    still_parses_js("hook.js", hook, hook.replace("return t", "return <h1>{t}</h1>"))
    still_parses_js("store.js", hook, "@observable\n" + hook)


def test_node_runs_once_a_text_in_the_kind_it_is_written_as(monkeypatch):
    """An ES module's edit ran Node four times (as a script first, each failing): 0.22 s of a 0.26 s check."""
    from editllm.editor import syntax

    runs: list[str] = []
    real = syntax._run
    monkeypatch.setattr(syntax, "_run", lambda command, text: runs.append(command[2]) or real(command, text))
    esm = CJS.replace("const path = require('path')", "import path from 'path'").replace(
        "module.exports = contentPath", "export default contentPath")
    assert still_parses_js("cp.js", esm, esm.replace("'content'", "'data'"))
    assert runs == ["--input-type=module", "--input-type=module"]
    runs.clear()
    assert still_parses_js("cp.js", CJS, CJS.replace("'content'", "'data'"))
    assert runs == ["--input-type=commonjs", "--input-type=commonjs"]
