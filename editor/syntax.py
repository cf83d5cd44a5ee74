"""A file that parsed before the edit must parse after it, in every language editllm can read.

A small model's output can be cut short inside a block, carry a line of its own prose among the code, drop a
closing brace or a comma, or stop half-way through a new function. Written, any of these breaks the user's file
with exit 0, and in a pre-commit hook it lands in a commit. So the edited text is parsed, with the reader the
language's own users trust where one ships with Python or the machine:

- Python with `ast` (the running Python's grammar);
- JavaScript with `node --check` where Node.js is installed (`editor.jssyntax`), and with tree-sitter's grammar
  where Node is not there or cannot read the file (JSX, decorators: a build step's syntax);
- Go, Rust, TypeScript and TSX, C, C++, Java, C#, PHP, Ruby, CSS and shell with tree-sitter's grammars, the
  parsers editors use for these languages (a parser per language written here would misread them, as the line
  scan in `wholefile.still_balanced` shows it must stay modest);
- JSON with `json`, TOML with `tomllib`, YAML with PyYAML's composer (tags such as CloudFormation's `!Ref` are
  read, not resolved).

The rule is relative: a file that did not parse before the edit is not judged (a file mid-edit, a template, a C
header whose macros tree-sitter cannot expand, newer syntax than the reader knows), so a reader's gaps refuse
nothing the user had. A reader that is missing (no Node, a grammar package not installed) skips its check.
"""

from __future__ import annotations

import importlib
import json
import sys
import tomllib
from functools import cache
from typing import Any

from editllm.editor.errors import EditError
from editllm.editor.jssyntax import BEYOND_NODE, JAVASCRIPT, still_parses_js
from editllm.editor.languages import PYTHON, language
from editllm.editor.source import parsed

# language tag (editor.languages) -> (tree-sitter grammar module, its function returning the language, name)
GRAMMARS = {
    "go": ("tree_sitter_go", "language", "Go"),
    "rust": ("tree_sitter_rust", "language", "Rust"),
    "typescript": ("tree_sitter_typescript", "language_typescript", "TypeScript"),
    "tsx": ("tree_sitter_typescript", "language_tsx", "TSX"),
    "jsx": ("tree_sitter_javascript", "language", "JavaScript"),
    "javascript": ("tree_sitter_javascript", "language", "JavaScript"),
    "c": ("tree_sitter_c", "language", "C"),
    "cpp": ("tree_sitter_cpp", "language", "C++"),
    "java": ("tree_sitter_java", "language", "Java"),
    "csharp": ("tree_sitter_c_sharp", "language", "C#"),
    "php": ("tree_sitter_php", "language_php", "PHP"),
    "ruby": ("tree_sitter_ruby", "language", "Ruby"),
    "css": ("tree_sitter_css", "language", "CSS"),
    "bash": ("tree_sitter_bash", "language", "shell"),
}


@cache
def _grammar(tag: str) -> Any:
    """tree-sitter's Language for a tag, or None where tree-sitter or the grammar's package is not installed."""
    module, function, _ = GRAMMARS[tag]
    try:
        import tree_sitter

        return tree_sitter.Language(getattr(importlib.import_module(module), function)())
    except (ImportError, AttributeError, ValueError, TypeError):  # not installed, or a grammar of another ABI
        return None


def _first_fault(node: Any) -> Any:
    """The first node tree-sitter marks as an error or as missing, walking only into subtrees that hold one."""
    if node.is_error or node.is_missing:
        return node
    for child in node.children:
        if child.has_error:
            return _first_fault(child)
    return node  # has_error without a marked child: the node itself is the place


def tree_fault(tag: str, text: str) -> str | None:
    """Where and why tree-sitter's grammar for `tag` cannot read `text` ("line 12: missing `}`"); "" when it
    reads it; None when the grammar is not installed."""
    grammar = _grammar(tag)
    if grammar is None:
        return None
    import tree_sitter

    root = tree_sitter.Parser(grammar).parse(text.encode("utf-8")).root_node
    if not root.has_error:
        return ""
    node = _first_fault(root)
    row = node.start_point[0]
    where = "at the end of the file" if row >= len(text.splitlines()) else f"line {row + 1}"
    if node.is_missing:
        return f"{where}: missing `{node.type}`"
    got = node.text.decode("utf-8", "replace").strip().splitlines()
    return f"{where}: unexpected `{got[0][:40]}`" if got else f"{where}: a syntax error"


def _yaml_fault(text: str) -> str | None:
    """PyYAML's complaint about `text`, read as a stream of documents; "" when it reads; None without PyYAML."""
    try:
        import yaml
    except ImportError:
        return None
    try:
        for _ in yaml.compose_all(text, Loader=yaml.SafeLoader):
            pass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark is not None else ""
        return f"{where}{getattr(exc, 'problem', None) or exc}"
    return ""


def _data_fault(tag: str, text: str) -> str | None:
    """The reader's complaint for a data file (JSON, TOML, YAML); "" when it reads."""
    if tag == "yaml":
        return _yaml_fault(text)
    try:
        json.loads(text) if tag == "json" else tomllib.loads(text)
    except json.JSONDecodeError as exc:
        return f"line {exc.lineno}: {exc.msg}"
    except tomllib.TOMLDecodeError as exc:
        return str(exc)
    return ""


DATA = {"json": "JSON", "toml": "TOML", "yaml": "YAML"}


def _python(path: str, old_text: str, new_text: str) -> None:
    """Python with `ast`: a result cut short inside a definition, a line of the model's prose among the code, or
    half a statement merged in parse no longer. The message names this Python: newer syntax fails in an older
    one."""
    if isinstance(parsed(old_text), Exception):
        return
    exc = parsed(new_text)
    if isinstance(exc, SyntaxError | ValueError):
        where = f"line {exc.lineno}: " if getattr(exc, "lineno", None) else ""
        version = f"Python {sys.version_info.major}.{sys.version_info.minor}"
        why = f"{where}{getattr(exc, 'msg', exc)}"
        raise EditError(f"{path}: the edited file is no longer valid {version} ({why}); nothing written") from None


def still_parses(path: str, old_text: str, new_text: str) -> None:
    """Refuse an edit that turns a file its language's reader reads into one it does not (see the module's
    docstring for the readers); a file the reader did not read before, or a reader that is not installed, refuses
    nothing."""
    if old_text == new_text:
        return
    if path.endswith(PYTHON):
        _python(path, old_text, new_text)
        return
    tag = language(path)
    if path.endswith(JAVASCRIPT) and not BEYOND_NODE.search(new_text) and still_parses_js(path, old_text, new_text):
        return  # Node read both texts (and raised if only the old one parses)
    if tag in DATA:
        fault, name, by = _data_fault(tag, new_text), DATA[tag], ""
    elif tag in GRAMMARS:
        fault, name, by = tree_fault(tag, new_text), GRAMMARS[tag][2], ", by tree-sitter"
    else:
        return
    if fault and (_data_fault(tag, old_text) if tag in DATA else tree_fault(tag, old_text)) == "":
        raise EditError(f"{path}: the edited file no longer parses as {name} ({fault}{by}); nothing written")
