"""A JavaScript file that parsed before the edit must parse after it, checked by Node.js where it is installed.

`editor.syntax` asks Node first for JavaScript: it is the reader JavaScript's users run. A real-model probe
(session 28) had two "convert this file to ES modules" edits written with exit 0 that no longer parsed (an
unbalanced `)` in an import line, an `await` in a function that was not `async`). `node --check` reads the text
from stdin and writes nothing. Where Node is missing, or cannot read the file (JSX, decorators, newer syntax than
this Node), `editor.syntax` asks tree-sitter's grammar instead.
"""

from __future__ import annotations

import re
import shutil
import subprocess

from editllm.editor.errors import EditError

JAVASCRIPT = (".js", ".mjs", ".cjs")
# What a build step, not Node, reads in a .js file: JSX (`<App />`, `</div>`) and decorators (a review, session 28:
# the first JSX added to a React hook file was refused)
BEYOND_NODE = re.compile(r"</[A-Za-z]|<[A-Za-z][\w.]*[^<>\n]*/>|(?:\breturn|=>|[=(,?:])\s*<[A-Za-z]|^\s*@[A-Za-z_$]",
                         re.M)
TIMEOUT_S = 20  # a check that does not answer in time is skipped, not failed


def _check(text: str, module: bool) -> str | None:
    """Node's complaint about `text` as an ES module (`module`) or a CommonJS script: "" when it parses, None when
    Node cannot say (not installed, no answer in time)."""
    node = shutil.which("node")
    if node is None:
        return None
    kind = "--input-type=module" if module else "--input-type=commonjs"
    try:
        done = subprocess.run([node, "--check", kind, "-"], input=text, capture_output=True, text=True,
                              timeout=TIMEOUT_S, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return "" if done.returncode == 0 else done.stderr or "a syntax error"


def _reason(err: str) -> str:
    """Node's one-line reason (`SyntaxError: Unexpected token ';'`) and the line it names, for the message."""
    where = next((line.split(":")[-1] for line in err.splitlines() if line.startswith("[stdin]:")), "")
    why = next((line.strip() for line in err.splitlines() if "Error:" in line), "a syntax error")
    return f"line {where}: {why}" if where.isdigit() else why


def still_parses_js(path: str, old_text: str, new_text: str) -> bool:
    """Refuse an edit that turns a JavaScript file Node parses (as a module or a script) into one it parses as
    neither. The two kinds are both tried so that a file converted to ES modules, as asked, passes; Node runs once
    per text and kind, and its complaint about the edited text is the message. True when Node judged the edit
    (and passed it), False when it could not (`editor.syntax` then asks tree-sitter's grammar)."""
    if not path.endswith(JAVASCRIPT) or old_text == new_text or BEYOND_NODE.search(new_text):
        return False
    kinds = [True] if path.endswith(".mjs") else [False] if path.endswith(".cjs") else [False, True]
    if not any(_check(old_text, module) == "" for module in kinds):
        return False  # no Node, or the file did not parse to begin with
    errors = {module: _check(new_text, module) for module in kinds}
    if "" in errors.values():
        return True  # it parses as one of them
    if None in errors.values():
        return False  # Node could not say
    esm = re.search(r"^\s*(?:import\s|import\{|export\s)", new_text, re.M) is not None
    module = esm if len(kinds) > 1 else kinds[0]  # the kind the text is written as tells the error that matters
    raise EditError(f"{path}: the edited file no longer parses as JavaScript ({_reason(errors[module])}, "
                    "by node --check); nothing written")
